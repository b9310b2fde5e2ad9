"""The replay's reads by status (observed.Recording.statuses): a file read while a `check` was
noted, whose last change was SETTLE_NS older than the run's start, is taken as unchanged while
its device, inode, size, mtime and ctime stay those noted with the read; any other file is read
and hashed again, as before. Every write sets a file's ctime to the clock, and no call sets it
back, so an edit that keeps the size and puts the mtime back is still seen."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from amp_clipfix import observed


def noted(files: list[Path]) -> observed.Recording:
    with observed.Recording() as seen:
        for path in files:
            observed.read_bytes(path)
    return seen


def settled_statuses(seen: observed.Recording) -> dict[str, observed.Status]:
    return {path: status for path, status in seen.statuses.items() if status is not None}


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("a.py", "b.py", "c.yaml"):
        (tmp_path / name).write_bytes(f"{name} = 1\n".encode())
        made.append(tmp_path / name)
    return made


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the replay's check reads (and hashes)."""
    read: list[str] = []
    real = observed.read_file

    def counted(path: Any) -> bytes:
        read.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(observed, "read_file", counted)
    return read


def test_a_settled_file_whose_status_holds_is_not_read_again(
    files: list[Path], reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)  # the files were written before the run began
    seen = noted(files)
    statuses = settled_statuses(seen)
    assert sorted(statuses) == sorted(map(str, files))
    assert observed.still_answers(seen.answers, statuses)
    assert reads == []
    assert observed.still_answers(seen.answers)  # without the statuses: every file is read
    assert sorted(reads) == sorted(map(str, files))


def test_another_status_reads_the_file_and_compares_its_bytes(
    files: list[Path], reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    seen = noted(files)
    statuses = settled_statuses(seen)
    replaced = files[1].with_suffix(".new")
    replaced.write_bytes(b"b.py = 2\n")  # same size, other bytes, another inode
    replaced.replace(files[1])
    assert not observed.still_answers(seen.answers, statuses)
    assert reads == [str(files[1])]

    files[1].write_bytes(b"b.py = 1\n")  # the noted bytes again under another status
    del reads[:]
    assert observed.still_answers(seen.answers, statuses)
    assert reads == [str(files[1])]


def test_a_file_changed_just_before_the_run_is_read_again_whatever_its_status(
    files: list[Path], reads: list[str]
) -> None:
    seen = noted(files)  # written a moment ago: not settled
    assert seen.statuses == dict.fromkeys(map(str, files))
    assert settled_statuses(seen) == {}
    before = os.stat(files[0])
    files[0].write_bytes(b"a.py = 2\n")  # in place: same size, same inode
    os.utime(files[0], ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back
    now = os.stat(files[0])
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert not observed.still_answers(seen.answers, settled_statuses(seen))
    assert str(files[0]) in reads


def test_a_file_read_twice_with_two_statuses_is_noted_without_one(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    with observed.Recording() as seen:
        observed.read_bytes(files[0])
        replaced = files[0].with_suffix(".new")
        replaced.write_bytes(files[0].read_bytes())  # the same bytes, another inode
        replaced.replace(files[0])
        seen.started = time.time_ns()  # as if the second read were of a settled file too
        observed.read_bytes(files[0])
    assert not seen.changed  # the same bytes
    assert seen.statuses[str(files[0])] is None


def status(mtime: int, ctime: int) -> Any:
    return SimpleNamespace(st_mtime_ns=mtime, st_ctime_ns=ctime)


@pytest.mark.skipif(os.name == "nt", reason="never settled on Windows")
def test_settled_means_both_times_older_than_the_margin() -> None:
    started, margin = 100 * observed.SETTLE_NS, observed.SETTLE_NS
    old = started - margin - 1
    assert observed.is_settled(status(old, old), started)
    assert not observed.is_settled(status(old, started - margin), started)  # ctime too recent
    assert not observed.is_settled(status(started - margin, old), started)  # mtime too recent
    assert not observed.is_settled(status(old, started + 1), started)  # a clock ahead of ours


def test_what_cannot_be_asked_is_read(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.py")
    status: observed.Status = (1, 2, 3, 4, 5)
    assert not observed._same_status(("read", gone, ""), {gone: status})
    assert not observed._same_status(("listdir", str(tmp_path), ""), {str(tmp_path): status})
