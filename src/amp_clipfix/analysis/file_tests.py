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

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache

STORED_AFTER = 3  # files tested in a run before the entry is written again


class FileTests:
    """One test's results over a project's files, as stored and as this run found them."""

    def __init__(self, cache: Cache, name: str) -> None:
        self.cache = cache
        self.key = cache.project_entry("tests", name)
        stored = cache.load(self.key)
        self.stored: dict[str, tuple[bytes, bool]] = stored if isinstance(stored, dict) else {}
        self.now: dict[str, tuple[bytes, bool]] = {}  # every file asked this run
        self.tested = 0  # files tested this run (for the tests and `save`)

    def result(self, path: Path, data: bytes, test: Callable[[], bool]) -> bool:
        """`test()`, the test of this file's `data`: the stored result when the file has the
        bytes it had, else tested (and noted)."""
        name, digest = str(path), self.cache.digest(data)
        known = self.stored.get(name)
        if isinstance(known, tuple) and len(known) == 2 and known[0] == digest:
            found = known[1] is True
        else:
            found = bool(test())  # raises as it would without the cache: nothing noted
            self.tested += 1
        self.now[name] = (digest, found)
        return found

    def save(self) -> None:
        """Write what this run asked and found, when it tested enough files to pay for it."""
        if self.tested >= STORED_AFTER:
            self.cache.store(self.key, {**self.stored, **self.now})
            self.stored, self.tested = {**self.stored, **self.now}, 0


def file_tests(cache: Cache | None, name: str) -> FileTests | None:
    """The run's stored results of test `name` (None without a cache): one object a run."""
    if cache is None:
        return None
    found = cache.tests.get(name)
    if not isinstance(found, FileTests):
        found = cache.tests[name] = FileTests(cache, name)
    return found


def save_tests(cache: Cache) -> None:
    """Once the run is done: the file tests it made, stored (`FileTests.save`), and the
    per-file values it asked (file_values.py)."""
    for tests in cache.tests.values():
        if isinstance(tests, FileTests):
            tests.save()
            continue
        from amp_clipfix.analysis.file_values import FileValues  # imported: it made `tests`

        if isinstance(tests, FileValues):
            tests.save()
