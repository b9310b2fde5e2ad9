"""A run that is not replayed takes the digest of a file it reads from the last noted run's
table of settled reads (replay.STATUSES, observed.Recording.known) when the file has the status
noted there both before and after it is read: every write sets a file's ctime to the clock, and
the status was noted SETTLE_NS after the file's last change, so the same status means the same
bytes (tests/test_replay_statuses.py). Any other file is hashed. The output is a cold run's."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import pytest
from spied import first_arguments

from amp_clipfix import observed, replay

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every text the run hashes as a file's bytes (and the build's, the seals' ...)."""
    return first_arguments(monkeypatch, observed, "_raw_digest")


def reading(files: list[Path], known: dict[str, object] | None = None) -> observed.Recording:
    with observed.Recording() as seen:
        seen.known = known or {}
        for path in files:
            observed.read_bytes(path)
    return seen


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("a.py", "b.py", "c.yaml"):
        (tmp_path / name).write_bytes(f"{name} = 1\n".encode())
        made.append(tmp_path / name)
    return made


def test_known_settled_reads_give_their_digest_unhashed(
    files: list[Path], hashed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)  # written before the run began
    first = reading(files)
    table = first.table()
    assert sorted(table) == sorted(map(str, files))
    del hashed[:]
    second = reading(files, dict(table))
    assert hashed == []
    assert second.answers == first.answers
    assert second.table() == table


def test_a_file_with_another_status_is_hashed(
    files: list[Path], hashed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    table = reading(files).table()
    replaced = files[0].with_suffix(".new")
    replaced.write_bytes(b"a.py = 2\n")  # same size, other bytes, another inode
    replaced.replace(files[0])
    del hashed[:]
    second = reading(files, dict(table))
    assert hashed == [b"a.py = 2\n"]
    assert second.answers[("read", str(files[0]), "")] == observed._digest(b"a.py = 2\n")


def test_an_unsettled_file_is_left_out_of_the_table_and_hashed(
    files: list[Path], hashed: list[bytes]
) -> None:
    first = reading(files)  # written a moment ago: a write in the same tick could follow
    assert first.table() == {}
    del hashed[:]
    reading(files, first.table())
    assert sorted(hashed) == sorted(path.read_bytes() for path in files)


@pytest.mark.parametrize(
    "entry",
    [None, "x", (1, 2), ((1, 2, 3), b"\0" * 32), ("status", b"\0" * 32), ((0,) * 5, b"short")],
    ids=["none", "text", "pair-of-ints", "short-status", "text-status", "short-digest"],
)
def test_a_malformed_entry_is_no_entry(files: list[Path], entry: object) -> None:
    with observed.Recording() as seen:
        seen.known = {str(files[0]): entry}
        assert seen.known_status(str(files[0])) is None


def run(folder: Path, monkeypatch: pytest.MonkeyPatch, *arguments: str) -> tuple[int, str]:
    """`amp-clipfix check ARGUMENTS .` in process, from `folder`, its output piped."""
    stdout, stderr = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    with monkeypatch.context() as patched:
        patched.chdir(folder)
        patched.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
        patched.setattr(sys, "argv", ["amp-clipfix", "check", *arguments, "."])
        patched.setattr(sys, "stdout", stdout)
        patched.setattr(sys, "stderr", stderr)
        with pytest.raises(SystemExit) as end:
            replay._main()
        stdout.flush()
    return int(end.value.code or 0), stdout.buffer.getvalue().decode()  # type: ignore[attr-defined]


def test_a_warm_check_after_an_edit_hashes_only_the_edited_file(
    tmp_path: Path, hashed: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    first = run(project, monkeypatch, "--format", "json")
    assert first[0] == 1
    monkeypatch.chdir(project)
    known = replay.known_reads()
    sources = sorted(p for p in project.rglob("*") if p.is_file() and ".amp_clipfix" not in str(p))
    assert {str(p.relative_to(project)) for p in sources} <= {
        os.path.relpath(path, project) for path in known
    }

    edited = project / "optim.py"
    edited.write_text(edited.read_text() + "\nunused = 1\n", encoding="utf-8")
    del hashed[:]
    warm = run(project, monkeypatch, "--format", "json")
    texts = {path.read_bytes() for path in sources}
    assert {data for data in hashed if data in texts} == {edited.read_bytes()}
    assert warm == run(project, monkeypatch, "--no-cache", "--format", "json")
