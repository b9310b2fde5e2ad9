"""Tests of one file's text kept in the cache by the file's digest (issue 35: a warm run tests
only the changed files).

Some tests are asked of every file of a project in every run, whatever changed: the Trainer
stage's prefilter (the trial's `trainer_candidates`, then the stage's `passing`) and the
searching rules' candidates (project_resolve.project_facts: the configs and the Python files,
no library code, that hold one of the rules' words). On fairseq (1,307 files) they cost about
0.035 s of the pre-commit command after a one-line edit. Each is a function of the file's path
and bytes alone (and of the tool's build, which is in the entry's name), so its result for a
file whose digest is the one stored is the stored result.

One entry per test, `tests-<sha256 of the build, the root and the test's name>`: each file's
path with its digest and result. A file not in it, or with other bytes, is tested again. The
entry is written again at the end of a run that tested three files or more (a file or two
changed since are tested again by each run, which costs less than writing it). A test that
raises is never stored: it raises as it would without the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.per_file_entry import PerFileEntry

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache


class FileTests(PerFileEntry):
    """One test's results over a project's files (a result is kept for a file this run did not
    ask: a later run may ask it again)."""

    def __init__(self, cache: Cache, name: str) -> None:
        key = cache.project_entry("tests", name)
        super().__init__(key, cache.load(key), cache.store, keeps_unasked=True)
        self.digest = cache.digest

    def result(self, path: Path, data: bytes, test: Callable[[], bool]) -> bool:
        """`test()`, the test of this file's `data`: the stored result when the file has the
        bytes it had, else tested (and noted)."""
        name, digest = str(path), self.digest(data)
        known = self.known(name, digest)
        if known is not None and type(known[1]) is bool:
            return known[1]
        found = bool(test())  # raises as it would without the cache: nothing noted
        self.missed(name, digest, found)
        return found


def file_tests(cache: Cache | None, name: str) -> FileTests | None:
    """The run's stored results of test `name` (None without a cache): one object a run."""
    if cache is None:
        return None
    found = cache.per_file.get(name)
    if not isinstance(found, FileTests):
        found = FileTests(cache, name)
        cache.per_file[name] = found
    return found
