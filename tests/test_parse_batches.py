"""The process pool parses files in batches and hands back no `ast` tree (bench/README.md,
session 31, per8): one task per run of files, not one per file, and the parent parses a module
again when its summary is asked (as for a file whose sites come from the cache). Each case
below counts or compares what a user of the pool gets; the same bytes out as one by one."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import parse_pool
from amp_clipfix.cli import main
from bench.factory_project import write_project


def small_files(tmp_path: Path, count: int) -> list[tuple[Path, bytes]]:
    write_project(tmp_path, count)
    paths = sorted((tmp_path / "pkg").glob("f*.py"), key=lambda path: int(path.stem[1:]))
    return [(path, path.read_bytes()) for path in paths]


def test_a_pool_over_many_small_files_submits_one_task_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 factory modules: 4 tasks of at most 32 files (265c0c02 submitted 100, one a file)."""
    submitted: list[int] = []
    real_submit = concurrent.futures.ProcessPoolExecutor.submit

    def counted_submit(pool, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        submitted.append(len(args[0]) if isinstance(args[0], list) else 1)
        return real_submit(pool, fn, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", counted_submit)
    work = small_files(tmp_path, 100)
    outcomes = parse_pool.parse_in_pool(work, 2)
    assert submitted == [32, 32, 32, 4]
    assert len(outcomes) == 100


def test_pooled_outcomes_are_the_serial_ones_in_order_without_the_tree(tmp_path: Path) -> None:
    work = small_files(tmp_path, 40)
    pooled = [read for read, error in parse_pool.parse_in_pool(work, 2) if error is None]
    serial = [read for read, error in map(parse_pool.parse_and_collect, *zip(*work)) if not error]
    assert len(pooled) == len(serial) == 40
    assert [read.sites for read in pooled] == [read.sites for read in serial]  # type: ignore[union-attr]
    assert [read.document.text for read in pooled] == [read.document.text for read in serial]  # type: ignore[union-attr]
    assert all(read.syntax is None for read in pooled)  # type: ignore[union-attr]
    assert all(read.syntax is not None for read in serial)  # type: ignore[union-attr]


def test_batches_cut_by_count_and_by_source_size_in_order() -> None:
    big = parse_pool.BATCH_BYTES // 2 + 1
    work = [
        (Path(f"f{index}.py"), b"x" * size)
        for index, size in enumerate([big, big, 10, big * 3, 1, 1])
    ]
    runs = parse_pool.batches(work)
    assert [(start, [path.name for path, _ in batch]) for start, batch in runs] == [
        (0, ["f0.py"]),
        (1, ["f1.py", "f2.py"]),
        (3, ["f3.py"]),  # a file larger than a batch is a batch of its own
        (4, ["f4.py", "f5.py"]),
    ]
    many = [(Path(f"g{index}.py"), b"") for index in range(70)]
    assert [len(batch) for _, batch in parse_pool.batches(many)] == [32, 32, 6]


def test_a_pooled_check_reports_what_a_check_in_one_process_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summaries come from the parent's own parse: findings that need them (a factory's
    caller in another module) are the same, and so is a file that does not parse."""
    write_project(tmp_path, 60)
    (tmp_path / "broken.py").write_bytes(b"import torch\nopt = torch.optim.AdamW(p, fused=True\n")
    monkeypatch.chdir(tmp_path)
    arguments = ["check", "--no-cache", "--format", "json", "--lightning-version", "2.6.6", "."]
    alone = CliRunner().invoke(main, [*arguments, "-j", "1"], catch_exceptions=False)
    monkeypatch.setattr(parse_pool, "PARALLEL_MIN_BYTES", 0)
    pooled = CliRunner().invoke(main, [*arguments, "-j", "2"], catch_exceptions=False)
    assert pooled.exit_code == alone.exit_code == 2
    assert pooled.stdout == alone.stdout
    report = json.loads(pooled.stdout)
    assert report["summary"]["by_code"] == {"ACF002": 60}
    assert [error["path"] for error in report["errors"]] == ["broken.py"]
