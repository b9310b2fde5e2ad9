"""A `check` that ends with exit 2 only because of errors the same files give again (a file
that does not parse: analysis/project_collect.is_lasting, the errors the analysis cache keeps)
is noted and replayed like one that ends with 0 or 1. Any other error (a file that cannot be
read as text, a parsing process that died) still runs the check again."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amp_clipfix import replay, run_notes
from amp_clipfix.cache_layout import seal, secret, unseal, version_folder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BROKEN = "import torch\n\nopt = torch.optim.AdamW(params, fused=True\n"  # no `)`


def check(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    variables = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", *arguments],
        cwd=project,
        env=variables,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def records(project: Path) -> list[Path]:
    """The noted runs (replay.STATUSES, the table of settled reads, is none)."""
    folder = Path(version_folder(project)) / "replay"
    found = folder.iterdir() if folder.is_dir() else []
    return sorted(path for path in found if replay._is_record_name(path.name))


def mark_records(project: Path) -> None:
    """Every noted run prints `replayed` instead (sealed as the run sealed it)."""
    key = secret(project)
    assert key is not None
    for record in records(project):
        value = unseal(key, record.name, record.read_bytes())
        assert value is not None
        answers, _, code, statuses = marshal.loads(value)
        marked = marshal.dumps((answers, [(1, b"replayed\n")], code, statuses))
        record.write_bytes(seal(key, record.name, marked))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", root)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "broken.py").write_text(BROKEN, encoding="utf-8")
    return root


@pytest.mark.parametrize("arguments", [["."], ["--format", "json", "."]], ids=["text", "json"])
def test_a_check_whose_only_error_is_a_parse_error_is_replayed(
    project: Path, arguments: list[str]
) -> None:
    first = check(project, *arguments)
    assert first.returncode == 2 and "broken.py" in first.stdout + first.stderr
    assert len(records(project)) == 1
    second = check(project, *arguments)
    assert (second.stdout, second.stderr, second.returncode) == (
        first.stdout,
        first.stderr,
        first.returncode,
    )
    mark_records(project)
    third = check(project, *arguments)
    assert (third.stdout, third.returncode) == ("replayed\n", 2)


def test_mending_the_file_runs_the_check_again(project: Path) -> None:
    check(project, ".")
    mark_records(project)
    (project / "broken.py").write_text(BROKEN + ")\n", encoding="utf-8")
    mended = check(project, ".")
    assert mended.stdout != "replayed\n"
    assert (mended.stdout, mended.returncode) == (
        check(project, "--no-cache", ".").stdout,
        check(project, "--no-cache", ".").returncode,
    )
    assert mended.returncode == 1


def test_a_read_error_beside_it_is_never_noted(project: Path) -> None:
    (project / "binary.py").write_bytes(b"x = 1\n\x00\n")
    assert check(project, ".").returncode == 2
    assert records(project) == []


def test_which_exit_codes_may_be_noted() -> None:
    run_notes.reset()
    try:
        assert not run_notes.may_note(0)  # nothing allowed it
        run_notes.allow()
        assert [run_notes.may_note(code) for code in (0, 1, 2, 3)] == [True, True, False, False]
        run_notes.allow(lasting_errors=True)
        assert [run_notes.may_note(code) for code in (0, 1, 2, 3)] == [True, True, True, False]
        run_notes.refuse()
        assert [run_notes.may_note(code) for code in (0, 1, 2)] == [False, False, False]
    finally:
        run_notes.reset()
