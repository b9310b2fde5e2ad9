"""One cache entry of a project holding an answer per file, by the file's path and digest (issue
35: a warm run loads one entry, not one per file, and asks again only the changed files).

Each answer kept this way is a function of the file's path and bytes alone (and of the tool's
build, which is in the entry's name): a file's text test (file_tests.py) or a per-file value
(file_values.py). So a file whose digest is the stored one gets the stored answer; any other
file is answered elsewhere (tested, taken from its own entry, computed) and noted. The entry
is written again at the end of a run that answered `STORED_AFTER` files or more elsewhere (a
file or two changed since cost less each run than writing it). What it then holds of the
files this run did not ask is the kind's choice (`keeps_unasked`): a test's answer is kept
for a file a later run may ask again; a value is dropped, so a removed, renamed or no longer
asked file's value is not carried from run to run.

This module imports nothing of the package: the cache (analysis/cache.py) makes and saves
these entries, and the kinds build on it.
"""

from __future__ import annotations

from collections.abc import Callable

STORED_AFTER = 3  # files answered elsewhere in a run before the entry is written again


class PerFileEntry:
    """One kind's answers over a project's files, as stored and as this run asked them."""

    def __init__(
        self,
        key: str,
        stored: object,
        store: Callable[[str, object], None],
        *,
        keeps_unasked: bool,
    ) -> None:
        self.key = key  # the entry's name (Cache.project_entry)
        self.stored: dict[str, tuple[bytes, object]] = stored if isinstance(stored, dict) else {}
        self.now: dict[str, tuple[bytes, object]] = {}  # every file asked this run
        self.misses = 0  # files this run answered elsewhere than the entry
        self.store = store
        self.keeps_unasked = keeps_unasked

    def known(self, name: str, digest: bytes) -> tuple[bytes, object] | None:
        """The stored (digest, answer) of file `name` when it was stored with these bytes (noted
        as asked this run), else None."""
        pair = self.stored.get(name)
        if type(pair) is tuple and len(pair) == 2 and pair[0] == digest:
            self.now[name] = pair
            return pair
        return None

    def missed(self, name: str, digest: bytes, answer: object) -> None:
        """The answer of file `name` with these bytes, found elsewhere this run."""
        self.now[name] = (digest, answer)
        self.misses += 1

    def save(self) -> None:
        """Write what this run asked, when it answered enough files elsewhere to pay for it."""
        if self.misses >= STORED_AFTER:
            kept = {**self.stored, **self.now} if self.keeps_unasked else dict(self.now)
            self.store(self.key, kept)
            self.stored, self.misses = kept, 0
