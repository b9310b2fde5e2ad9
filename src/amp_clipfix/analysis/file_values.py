"""A project's per-file cache values of one kind kept together in one entry (issue 35: a warm
run's fixed cost).

Two kinds of value are stored per file, named by the file's path and digest: a collected
file's sites (`Cache.get`) and a notebook's code text (`Cache.text("searchable", ...)`). A warm
run asks them of every file that passes the prefilter, whatever changed: on NeMo after a
one-line edit, 308 entries, each opened, read, its seal checked and unpickled (about 0.1 ms
each, a sixth of the pre-commit command's cache loads), for 1.9 MB of values.

So each kind is also kept for the whole project in one entry, `values-<sha256 of the build, the
root and the kind>` (Cache.project_entry): each file's path with its digest and value. A
file whose digest is the one there gets that value, which is what its own entry holds: a
value is a function of the file's path and bytes (and of the build, in both names). Any other
file goes to its own entry as before (and is computed when that misses). The project entry is
written again, with the values this run asked, at the end of a run that took three or more
from elsewhere (a file or two changed since cost a few entries each run, less than writing
it), so a file no longer asked (removed, renamed, no longer passing) drops out then
(per_file_entry.py, which file_tests.py builds on too).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis.per_file_entry import PerFileEntry


class FileValues(PerFileEntry):
    """One kind's values over a project's files (a file this run did not ask drops out when the
    entry is written again). Made by the cache (`Cache.values`), which asks them."""

    def __init__(self, key: str, stored: object, store: Callable[[str, object], None]) -> None:
        super().__init__(key, stored, store, keeps_unasked=False)

    def get(self, path: Path, digest: bytes) -> object | None:
        """The value stored for `path` with these bytes (`digest`), else None."""
        known = self.known(str(path), digest)
        return None if known is None else known[1]

    def put(self, path: Path, digest: bytes, value: object) -> None:
        """The value of `path` with these bytes, found elsewhere this run."""
        self.missed(str(path), digest, value)
