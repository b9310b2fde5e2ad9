"""Tests of the one base of the project's per-file cache entries (analysis/per_file_entry.py,
branch `fixed9`): a file's text tests (file_tests.py) and its values (file_values.py) are kept
by the same code, and differ only in what an entry written again keeps of the files a run did
not ask (a test's answer is kept, a value drops out); a stored answer that is not one of its
kind is never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.analysis.cache import Cache
from amp_clipfix.analysis.file_tests import FileTests, file_tests
from amp_clipfix.analysis.per_file_entry import STORED_AFTER, PerFileEntry
from amp_clipfix.models import FileSites


def cache_of(root: Path, monkeypatch: pytest.MonkeyPatch) -> Cache:
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "user-cache"))
    root.mkdir(exist_ok=True)
    return Cache(root)


def sites(path: Path) -> FileSites:
    return FileSites(path, has_guard_helper=False, candidates=())


def ask(cache: Cache, kind: str, paths: list[Path]) -> PerFileEntry:
    """Every path asked once, as a run asks it (a test of its bytes, or its sites: `put` on a
    miss, as the collection does), then the run's entries saved: the entry asked."""
    for path in paths:
        data = path.name.encode()
        if kind == "tests":
            tests = file_tests(cache, "named")
            assert tests is not None
            assert tests.result(path, data, lambda: True) is True
        elif cache.get(path, data) is None:
            cache.put(path, data, sites(path))
    cache.save_per_file()
    found = cache.per_file["named" if kind == "tests" else "values sites"]
    assert isinstance(found, PerFileEntry)
    return found


@pytest.mark.parametrize(("kind", "kept"), [("tests", True), ("values", False)])
def test_an_entry_written_again_keeps_or_drops_the_files_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, kept: bool
) -> None:
    """Four files stored; a run asks two of them and three new ones (enough to write the entry
    again): the two not asked are still in the written entry for a test, not for a value, and
    the next run takes every asked file from it."""
    root = tmp_path / "project"
    first = [root / f"{name}.py" for name in "abcd"]
    assert ask(cache_of(root, monkeypatch), kind, first).misses == 0  # written: saved, reset
    later = [*first[:2], *(root / f"n{i}.py" for i in range(STORED_AFTER))]
    entry = ask(cache_of(root, monkeypatch), kind, later)
    stored = cache_of(root, monkeypatch).load(entry.key)
    assert isinstance(stored, dict)
    expected = {str(path) for path in later} | ({str(p) for p in first[2:]} if kept else set())
    assert set(stored) == expected
    again = ask(cache_of(root, monkeypatch), kind, later)
    assert again.misses == 0 and set(again.now) == {str(path) for path in later}


def test_a_stored_test_answer_that_is_not_a_bool_is_tested_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry holding the file's digest with something other than True or False (written by
    another build's bug, say) answers nothing: the file is tested, and the answer noted."""
    root = tmp_path / "project"
    cache = cache_of(root, monkeypatch)
    path, data = root / "a.py", b"fused"
    key = FileTests(cache, "fused").key
    cache.store(key, {str(path): (cache.digest(data), "not a result")})
    tests = FileTests(cache_of(root, monkeypatch), "fused")
    assert tests.result(path, data, lambda: True) is True
    assert tests.misses == 1 and tests.now[str(path)][1] is True
