"""The project's candidate files, each parsed when a search first asks for it, and what one
computation of its own asked of them (`Own`: candidate_answers.py)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from amp_clipfix.analysis.questions import Questions
from amp_clipfix.analysis.recording import Candidates, TextTest

FileFacts = TypeVar("FileFacts")  # facts.FileFacts (which imports this module)


class Own:
    """The files one computation of its own asked for, hits included, in the order it asked:
    the candidates (`parsed`: whether each parses) and the other files `ProjectFacts.file`
    loaded or tried (`loads`). A computation reused puts them back as computing it would have
    left them, whatever the computations before it left."""

    def __init__(self) -> None:
        self.parsed: dict[Path, bool] = {}
        self.loads: dict[Path, None] = {}
        self.order: dict[Path, None] = {}  # both, as first asked


class LazyFiles(Mapping[Path, FileFacts]):
    """The project's files that hold a searching rule's word (`candidates`, in the project's
    order, listed when first asked: a run whose queries are all reused lists nothing), each
    parsed when a search first asks for it. `loaded` are the files read for another reason
    (`ProjectFacts.file`), in read order; together they are what an eager read would hold.
    A file met again is noted as read, whoever parsed it: a query after one whose reads it
    does not count (queries.py `detach`) reads it then."""

    def __init__(
        self,
        candidates: list[Path] | Callable[[], list[Path]],
        text: Callable[[Path], bytes | None],
        read: Callable[[Path], FileFacts | None],
        noted: Candidates | None = None,
        note: Callable[[Path], None] = lambda path: None,
    ) -> None:
        self.text, self.read = text, read
        self.listing = candidates if callable(candidates) else lambda: candidates
        # what a memoised query asks of the list (queries.py); noted nowhere without one
        self.noted = noted if noted is not None else Candidates({}, ())
        self.note = note  # a read of a file's bytes, noted as `read` notes it
        self.done: dict[Path, FileFacts | None] = {}
        # None: promised (`promise`), read on first `get` where it stands in the order
        self.loaded: dict[Path, FileFacts | None] = {}
        self.questions = Questions()  # what `with_words` was asked (what the settle checks)
        # a computation of its own running: a file met again is read again (noted) and kept
        self.own: Own | None = None
        # the tree a search's test parsed of a file it let through, with the text parsed:
        # handed to the file's read when it parses that same text (kept_call_test.py)
        self.tested: dict[Path, tuple[str, ast.Module]] = {}

    candidates = functools.cached_property(lambda self: self.listing())
    known = functools.cached_property(lambda self: set(self.candidates))

    def get(self, path: Path, default: object = None) -> FileFacts | None:  # type: ignore[override]
        own = self.own
        if path in self.loaded:
            found = self.loaded[path]
            if found is None:  # promised: read now, where a cold run's load put it
                found = self.read(path)
                if found is None:  # it no longer parses: no hit (never so for a promise)
                    del self.loaded[path]
                    return self.get(path)
                self.loaded[path] = found
            else:
                self.note(path)  # a hit: another computation may have loaded it (`detach`)
            if own is not None:
                own.loads[path] = own.order[path] = None
            return found
        if path not in self.known:
            self.noted.member(path)
            return None
        if path not in self.done:
            self.done[path] = self.read(path)
        else:
            self.note(path)
        if own is not None:
            own.parsed[path] = self.done[path] is not None
            own.order[path] = None
        return self.done[path]

    def promise(self, path: Path) -> None:
        """`path` loaded as a computation put back loaded it (certificate.Watch.put_back),
        read only when a search asks for it: a file a cold run loaded there and nothing after
        reads is not parsed. Its place in `loaded` is the load's."""
        if path not in self.loaded and path not in self.known:
            self.loaded[path] = None

    def __getitem__(self, path: Path) -> FileFacts:
        if (found := self.get(path)) is None:
            raise KeyError(path)
        return found

    def __contains__(self, path: object) -> bool:
        return isinstance(path, Path) and self.get(path) is not None

    def __iter__(self) -> Iterator[Path]:
        self.noted.listed(self.candidates)
        yield from (path for path in self.candidates if self.get(path) is not None)
        yield from (path for path in self.loaded if path not in self.known)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def with_words(self, words: tuple[bytes, ...], where: TextTest | None) -> Iterator[FileFacts]:
        """The files whose text holds one of `words` and pass `where`, by path; only they parse."""
        from amp_clipfix.analysis.word_holders import holders

        for path in holders(self, words, where):
            if (found := self.get(path)) is not None:
                yield found
