"""Memoised project queries that record what they read (salsa's model, issue 35).

A query is one project-level answer: the trial resolution (which Trainer files matter), the
project resolution, the searching rules' findings. Each is stored in the cache with what it
read, and a later run reuses it when everything it read is as it was:

- `files`: the files whose text it read (a summary, a document, the bytes), by sha256: a file
  whose hash changed invalidates it;
- `scans`: the text scans over every file (`scan`: which files hold a word, write it as a whole
  word, match a pattern), with the files they found: a scan is still right when every changed
  file gives the answer it gave before (so only the changed files are looked at again);
- `derived`: whole-project text analyses (`derive`: relevance.py's), with their answer: still
  right when computed again on today's files they give the same answer.

Every query also depends on the project's list of files and on the queries run before it in the
run (its key chains theirs): an added, removed or renamed file runs them all again, and the
evaluator they share sees the same work done. What one query read counts for the later ones
too (they may reuse what the evaluator learnt for it). A read the recording cannot name (the
whole project's text iterated outside a `scan`) marks the run `everything`: nothing is stored.
Nothing is stored from a run whose evaluator cut an answer (its budget spent, a bound met):
such an answer depends on how much work ran before it. A cache is never a source of truth: an
answer is reused only when all of this holds, else it is computed as a cold run computes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from amp_clipfix.records import record

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache

from amp_clipfix.analysis.recording import (
    DERIVED,
    Reads,
    Recording,
    Test,
    passes,
    raw,
)

T = TypeVar("T")


@record(frozen=True)
class Answer:
    """A stored query: its answer and what it read."""

    revision: dict[str, bytes]  # every project file's sha256 when it was computed
    files: tuple[str, ...]
    scans: dict[Test, frozenset[str]]
    exists: dict[Test, str | None]
    derived: dict[tuple[object, ...], object]
    value: object


class Queries:
    """The memoised queries of one project's run."""

    def __init__(
        self,
        cache: Cache,
        contents: Mapping[Path, bytes],
        searchable: Mapping[Path, bytes],
        salt: str,
        evaluator: Callable[[], object | None],
    ) -> None:
        self.cache, self.contents, self.searchable = cache, contents, searchable
        self.evaluator = evaluator  # the run's evaluator, None until one is made
        self.reads = Reads()
        self.revision = {str(path): cache.digest(data) for path, data in contents.items()}
        head = hashlib.sha256(
            f"{cache.build}\0{cache.root}\0{salt}\0".encode("utf-8", "surrogateescape")
        )
        for path in contents:
            head.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
        head.update(b"\1")
        for path in searchable:  # which files can be searched: a read that fails leaves one out
            head.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
        self.chain = head.hexdigest()
        self.reused: list[str] = []  # the queries answered from the cache (for the tests)

    def recording(self, data: Mapping[Path, bytes]) -> Recording:
        return Recording(raw(data), self.reads)

    def run(
        self,
        name: str,
        inputs: object,
        compute: Callable[[], T],
        replay: Callable[[T], None] | None = None,
    ) -> T:
        """The answer of query `name` on `inputs` (and the project's files): stored when every
        file it read is as it was, else computed (and stored when the reads were all noted)."""
        from amp_clipfix.analysis.cache import canonical

        digest = hashlib.sha256(f"{self.chain}\0{name}\0".encode())
        digest.update(repr(canonical(inputs)).encode("utf-8", "surrogateescape"))
        self.chain = digest.hexdigest()
        key = f"query-{self.chain}"
        stored = self.cache.load(key)
        if isinstance(stored, Answer) and self.holds(stored):
            self.reads.files.update(stored.files)
            self.reads.scans.update(stored.scans)
            self.reads.exists.update(stored.exists)
            self.reads.derived.update(stored.derived)
            self.reused.append(name)
            if replay is not None:
                replay(stored.value)  # type: ignore[arg-type]
            return stored.value  # type: ignore[return-value]
        value = compute()
        self.store(key, value)
        return value

    def store(self, key: str, value: object) -> None:
        reads = self.reads
        evaluator = self.evaluator()
        if getattr(evaluator, "cuts", 0):  # a budget or bound cut an answer: nothing is stored
            reads.everything = True
        if reads.everything:
            return
        files = tuple(sorted(reads.files))
        if any(path not in self.revision for path in files):
            return  # a file outside the project's list: never reused
        answer = Answer(
            self.revision, files, dict(reads.scans), dict(reads.exists), dict(reads.derived), value
        )
        self.cache.store(key, answer)

    def holds(self, stored: Answer) -> bool:
        """`still`, and no when it fails: a stored entry never breaks a run."""
        try:
            return self.still(stored)
        except Exception:  # noqa: BLE001 - a miss, whatever fails: the query is computed
            return False

    def still(self, stored: Answer) -> bool:
        """Whether everything `stored` read is as it was."""
        revision = self.revision
        if stored.revision.keys() != revision.keys():
            return False
        if any(stored.revision[path] != revision[path] for path in stored.files):
            return False
        changed = [path for path, digest in revision.items() if stored.revision[path] != digest]
        texts = {Path(path): self.searchable.get(Path(path)) for path in changed}

        for test, found in stored.scans.items():
            for path, data in texts.items():
                passing = data is not None and passes(test, data)
                if passing != (str(path) in found):
                    return False
        for test, witness in stored.exists.items():
            if witness is None:
                if any(data is not None and passes(test, data) for data in texts.values()):
                    return False
            elif witness in changed:
                data = texts[Path(witness)]
                if data is None or not passes(test, data):
                    return False  # another file may pass: asked again
        if stored.derived and changed:
            import amp_clipfix.analysis.resolve_base  # noqa: F401 - fills DERIVED

            edited = {path: data for path, data in texts.items() if data is not None}
            for key, answer in stored.derived.items():
                if not DERIVED[str(key[0])](self.searchable, edited, answer, *key[1:]):
                    return False
        return True
