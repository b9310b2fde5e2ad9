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
it), so a file no longer asked (removed, renamed, no longer passing) drops out then.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Cache(Protocol):
        """What the values ask of the analysis cache (analysis/cache.py's `Cache`, which asks
        them: a protocol, not an import of that module)."""

        tests: dict[str, object]

        def project_entry(self, kind: str, detail: str) -> str: ...
        def load(self, key: str) -> object | None: ...
        def store(self, key: str, value: object) -> None: ...


STORED_AFTER = 3  # values taken from elsewhere in a run before the entry is written again


class FileValues:
    """One kind's values over a project's files, as stored and as this run asked them."""

    def __init__(self, cache: Cache, kind: str) -> None:
        self.cache = cache
        self.key = cache.project_entry("values", kind)
        stored = cache.load(self.key)
        self.stored: dict[str, tuple[bytes, object]] = stored if isinstance(stored, dict) else {}
        self.now: dict[str, tuple[bytes, object]] = {}  # every file asked this run, with its value
        self.elsewhere = 0  # values this run took from a file's own entry or computed

    def get(self, path: Path, digest: bytes) -> object | None:
        """The value stored for `path` with these bytes (`digest`), else None."""
        name = str(path)
        known = self.stored.get(name)
        if type(known) is tuple and len(known) == 2 and known[0] == digest:
            self.now[name] = known
            return known[1]
        return None

    def put(self, path: Path, digest: bytes, value: object) -> None:
        """The value of `path` with these bytes, found elsewhere this run."""
        self.now[str(path)] = (digest, value)
        self.elsewhere += 1

    def save(self) -> None:
        """Write what this run asked, when it found enough elsewhere to pay for it."""
        if self.elsewhere >= STORED_AFTER:
            self.cache.store(self.key, self.now)
            self.stored, self.elsewhere = dict(self.now), 0


def file_values(cache: Cache, kind: str) -> FileValues:
    """The run's values of `kind` (one object a run and project, loaded when first asked)."""
    found = cache.tests.get(f"values {kind}")
    if not isinstance(found, FileValues):
        found = cache.tests[f"values {kind}"] = FileValues(cache, kind)
    return found
