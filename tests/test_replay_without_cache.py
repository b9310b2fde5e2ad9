"""A `check` started where no cache folder is at or above the current folder has no record to
replay, so it does not hash the tool's build to look for one (replay.py `_main`); a run that
makes a cache folder (the first in a project) still notes its record, under the key the next
run looks for."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from amp_clipfix import cache_layout, replay
from amp_clipfix.cache_layout import seal, secret, unseal, version_folder

SOURCE = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.Adam(model.parameters(), fused=True)
"""


def run(folder: Path, monkeypatch: pytest.MonkeyPatch, hashed: list[str]) -> tuple[int, str]:
    """`amp-clipfix check --format json .` in process, from `folder`, its output piped; each
    hash of the build noted in `hashed`."""
    stdout, stderr = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    sources_digest = cache_layout.sources_digest

    def noted(package: str, started: int) -> str:
        hashed.append(package)
        return sources_digest(package, started)

    with monkeypatch.context() as patched:
        patched.chdir(folder)
        patched.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
        patched.setattr(cache_layout, "sources_digest", noted)
        patched.setattr(cache_layout, "_fingerprints", {})
        patched.setattr(sys, "argv", ["amp-clipfix", "check", "--format", "json", "."])
        patched.setattr(sys, "stdout", stdout)
        patched.setattr(sys, "stderr", stderr)
        with pytest.raises(SystemExit) as end:
            replay._main()
        stdout.flush()
    output = stdout.buffer.getvalue().decode()  # type: ignore[attr-defined]
    return int(end.value.code or 0), output


def caches_above(folder: Path) -> list[Path]:
    return [p for p in (folder, *folder.parents) if Path(version_folder(p)).is_dir()]


def test_no_cache_folder_no_hash_of_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not caches_above(empty)
    hashed: list[str] = []
    code, output = run(empty, monkeypatch, hashed)
    assert code == 0 and '"findings": []' in output
    assert hashed == []  # hashed once on 8ca2f40, for a record no folder can hold
    assert not caches_above(empty)


def test_the_first_run_in_a_project_notes_its_record_under_the_next_runs_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "train.py").write_text(SOURCE, encoding="utf-8")
    assert not caches_above(project)
    hashed: list[str] = []
    first = run(project, monkeypatch, hashed)
    assert len(hashed) == 1  # the analysis cache's hash, reused for the record's key
    records = sorted((Path(version_folder(project)) / "replay").iterdir())
    with monkeypatch.context() as patched:
        patched.chdir(project)
        patched.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
        key = replay.run_key(["check", "--format", "json", "."])
    # the record under the next run's key, beside the settled reads it leaves (STATUSES)
    assert [record.name for record in records] == sorted([key, replay.STATUSES])

    again: list[str] = []
    assert run(project, monkeypatch, again) == first
    assert sorted((Path(version_folder(project)) / "replay").iterdir()) == records

    secret_key = secret(project)  # make the record print `replayed`: the next run replays it
    assert secret_key is not None
    value = unseal(secret_key, key, records[0].read_bytes())
    assert value is not None
    answers, _, code, statuses = replay.unpacked(value)
    marked = replay.packed(answers, [(1, b"replayed")], 1, statuses)
    records[0].write_bytes(seal(secret_key, key, marked))
    assert run(project, monkeypatch, again) == (1, "replayed")
