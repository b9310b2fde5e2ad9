"""A search's answer per candidate file, each computed on its own and kept with its own
reads (issue 35).

A search that reads its candidate files one by one in path order (ACF011's calls) is a query
(queries.py): one edited file it read computes it again. Each candidate is computed on an
evaluator of its own (`own_evaluator`: `ProjectFacts.isolated_of`), cold or warm, cached or
not: no memo another computation made, its own budget, its own cycles. It shares with the rest
of the run only what is a function of the files' bytes and list (the summaries' loader, the
module names, the word index, the text answers of callers.py), and every use of those notes
what it stands for, hits included (`LazyFiles.own`, `recording.noted_again`). So a candidate's
answer is a function of its own reads (`Part.reads`, noted into fields of their own while it
runs), whatever the candidates and queries before it did.

The query's entry keeps each candidate's `Part`: its answer, its own reads, what it left
(certificate.Left), and the files it asked for (`lazy_files.Own`). When the query is computed
again, a candidate of today's list whose earlier part's own reads hold (`Queries.holds`) is
answered from it, unparsed, wherever it stands in the list, when its computation was clean for
the rest of the run: no file reported late, no question asked, no fits listed, no error, no
list of the candidates read (the files loaded before join a list). What it left is put back as
computing it would leave it (`put_back`: its reads, the files it parsed and loaded, in its
order, its documents); the project's evaluator is not one of them (it never touched it).

A file whose answer is a function of its bytes alone (ACF011's YAML configs) is kept by their
digest instead (`answers_by_text`): reused wherever those bytes and the answer's other inputs
(`detail`) are as they were, whatever else changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from amp_clipfix.analysis.recording import READ_FIELDS, READ_KINDS, fields_of
from amp_clipfix.analysis.word_holders import holders
from amp_clipfix.records import record, replace

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import FileFacts, LazyFiles, ProjectFacts
    from amp_clipfix.analysis.query_checks import Answer
    from amp_clipfix.analysis.recording import Reads

T = TypeVar("T")
Fields = tuple[Any, ...]  # the read fields of `Reads`, in recording.READ_FIELDS order
# a file's answer by its bytes: its path, their digest, what else it depends on, the answer
Text = tuple[str, bytes, object, tuple[object, ...]]


@record(frozen=True)
class Part:
    """One candidate's answer, computed on its own: what it read, what it left, and the files
    it asked for (lazy_files.Own)."""

    path: str
    answer: tuple[object, ...]
    reads: Fields  # its own reads, hits included
    left: object  # certificate.Left, on the project's state
    errors: tuple[object, ...]  # the errors it reported (files that do not parse)
    searched: tuple[Path, ...]  # the documents it read (`Collection.searched`), as first asked
    parsed: tuple[tuple[str, bool], ...]  # the candidates it asked for, and whether each parses
    loads: tuple[str, ...]  # the other files it loaded or tried (`ProjectFacts.file`), in order
    whole: frozenset[str]  # the files whose summary it made or met


@record(frozen=True)
class Kept:
    """An entry's answers per candidate, in path order, and per file answered by its bytes;
    what the listing of the candidates found of each file, with the words and the test's
    condition it was asked with (`Listing`)."""

    parts: tuple[Part, ...]
    texts: tuple[Text, ...] = ()  # `answers_by_text`
    listing: Listing | None = None


# The words and the text test's noted condition a listing was asked with, and what it found of
# each file (word_holders: NO_WORD, REFUSED, PASSES), by path
Listing = tuple[tuple[bytes, ...], object, tuple[tuple[str, int], ...]]


def answers_by_file(
    facts: ProjectFacts,
    words: tuple[bytes, ...],
    where: Any,
    answer_of: Callable[[FileFacts], Iterable[T]],
) -> Iterator[T]:
    """`answer_of` each file `facts.with_words(*words, where=where)` gives, in order, each on an
    evaluator of its own; within a memoised query, kept per file and reused where its own reads
    hold (`Session`)."""
    from amp_clipfix.analysis.facts import LazyFiles

    lazy = facts.files
    reads = lazy.noted.reads if isinstance(lazy, LazyFiles) else None
    session = None if reads is None else reads.parts
    if not isinstance(session, Session) or session.started:
        for file in facts.with_words(*words, where=where):
            with own_evaluator(facts):
                answer = tuple(answer_of(file))
            yield from answer
        return
    yield from session.answers(facts, lazy, words, where, answer_of)  # type: ignore[arg-type]


@contextmanager
def own_evaluator(facts: ProjectFacts) -> Iterator[Evaluator | None]:
    """Within it, `facts.evaluator` is a new one (`ProjectFacts.isolated_of`), yielded."""
    make = facts.isolated_of
    if make is None:
        yield None
        return
    shared, facts._evaluator = facts._evaluator, make()
    try:
        yield facts._evaluator
    finally:
        facts._evaluator = shared


def answers_by_text(
    facts: ProjectFacts,
    paths: Iterable[Path],
    detail: object,
    answer_of: Callable[[Path], Iterable[T]],
) -> Iterator[T]:
    """`answer_of` each of `paths`, a function of that file's bytes and `detail` alone (it
    reads no other file, no evaluator): within a memoised query, an answer the earlier entry
    kept for the same bytes (their digest) and an equal `detail` is reused, uncomputed."""
    from amp_clipfix.analysis.facts import LazyFiles

    lazy = facts.files
    reads = lazy.noted.reads if isinstance(lazy, LazyFiles) else None
    session = None if reads is None else reads.parts
    for path in paths:
        if isinstance(session, Session):
            yield from session.text_answer(path, detail, answer_of)
        else:
            yield from answer_of(path)


def note(reads: Reads, fields: Fields) -> None:
    """Add what a reused part read to the query's reads."""
    files, scans, found, derived, words, members, listed, tests = fields
    reads.files.update(files)
    reads.scans.update(scans)
    reads.exists.update(found)
    reads.derived.update(derived)
    reads.words.update(words)
    reads.members.update(members)
    reads.listed.update(listed)
    for path, results in tests.items():
        reads.tests.setdefault(path, {}).update(results)


def shared_reads(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts, each read value equal to another part's made that one object: the candidates
    of one search read the same scans and text tests (on NeMo, 20 of ACF011's 75 parts hold one
    507-file scan), and a pickle writes an object it met already as a reference. The same
    values; the entry is written, hashed and loaded in a third of the bytes."""
    one: dict[object, Any] = {}

    def shared(value: Any, key: object = None) -> Any:  # frozensets; a file's tests by items
        return one.setdefault(value if key is None else key, value)

    made = []
    for part in parts:
        if len(part.reads) != len(READ_FIELDS):
            made.append(part)  # (): it read every text, nothing to share
            continue
        files, scans, found, derived, words, members, listed, tests = part.reads
        reads = (
            shared(files),
            {test: shared(paths) for test, paths in scans.items()},
            found,
            derived,
            shared(words),
            shared(members),
            {test: shared(paths) for test, paths in listed.items()},
            {path: shared(results, ("tests", *results.items())) for path, results in tests.items()},
        )
        made.append(replace(part, reads=reads))
    return tuple(made)


def own_reads(reads: Reads) -> tuple[Any, ...]:
    """Empty the read fields of `reads` (a computation of its own notes into them); what they
    held, to `merge` back."""
    held = (*(getattr(reads, name) for name in READ_FIELDS), reads.everything)
    for name, kind in zip(READ_FIELDS, READ_KINDS):
        setattr(reads, name, kind())
    reads.everything = False
    return held


def merge(reads: Reads, held: tuple[Any, ...]) -> tuple[Fields, bool]:
    """Put back what `own_reads` emptied, with what the computation read added; its own reads
    (and whether it read everything)."""
    own, everything = fields_of(reads), reads.everything
    for name, value in zip(READ_FIELDS, held):
        setattr(reads, name, value)
    reads.everything = held[-1] or everything
    note(reads, own)
    return own, everything


class Session:
    """One computation of a query: the earlier entry's parts it may reuse, and the parts it
    makes (stored with its entry when it ends)."""

    def __init__(self, queries: Any, earlier: Answer | None) -> None:  # queries.Queries
        self.queries, self.earlier = queries, earlier
        self.started = False  # one search a query (a second one computes whole, unkept)
        self.searched: tuple[Part, ...] | None = None  # what the search by candidate made
        self.kept: object = None  # the earlier entry's `Kept`, loaded once (`earlier_kept`)
        self.loaded = False
        self.texts: dict[str, Text] = {}  # the answers kept by bytes this computation made
        self.listing: Listing | None = None  # what its listing of the candidates found
        self.by_name: dict[str, Text] | None = None  # the earlier entry's, by path
        self.reused = 0  # the candidates answered from the earlier entry (for the tests)

    @property
    def made(self) -> Kept | None:
        """What the entry keeps: the search's parts and the answers kept by bytes."""
        texts = tuple(self.texts.values())
        if not self.searched and not texts:
            return None
        return Kept(self.searched or (), texts, self.listing)

    def earlier_kept(self) -> object:
        """The earlier entry's `Kept` (an entry of its own, `queries.Shared`: loaded only by
        a computation that may use it), or None."""
        if not self.loaded and self.earlier is not None:
            self.kept = self.queries.shared_part(self.earlier.parts)
        self.loaded = True
        return self.kept

    def text_answer(
        self, path: Path, detail: object, answer_of: Callable[[Path], Iterable[T]]
    ) -> tuple[T, ...]:
        """`answer_of(path)`, or the earlier entry's answer for the same bytes and `detail`."""
        digest = self.queries.revision.get(str(path))
        if digest is None:  # bytes this run did not read: never kept
            return tuple(answer_of(path))
        if self.by_name is None:
            kept = self.earlier_kept()
            texts = kept.texts if isinstance(kept, Kept) else ()
            self.by_name = {text[0]: text for text in texts}
        earlier = self.by_name.get(str(path))
        if earlier is not None and earlier[1] == digest and earlier[2] == detail:
            self.texts[str(path)] = earlier
            return earlier[3]  # type: ignore[return-value]
        answer = tuple(answer_of(path))
        self.texts[str(path)] = (str(path), digest, detail, answer)
        return answer

    def answers(
        self,
        facts: ProjectFacts,
        lazy: LazyFiles,
        words: tuple[bytes, ...],
        where: Any,
        answer_of: Callable[[FileFacts], Iterable[T]],
    ) -> Iterator[T]:
        self.started = True
        kept = self.earlier_kept() if self.queries.watch is not None else None
        earlier = {part.path: part for part in kept.parts} if isinstance(kept, Kept) else {}
        parts: list[Part] = []
        condition = getattr(where, "condition", None) if where is not None else ()
        seen: dict[str, int] = {}
        for path in holders(lazy, words, where, self.known(kept, words, condition), seen):
            part = earlier.get(str(path))
            if part is not None and self.holds(part):
                self.put_back(facts, part)
                self.reused += 1
            else:
                part = self.computed(facts, lazy, path, answer_of)
            parts.append(part)
            yield from part.answer  # type: ignore[misc]
        self.searched = shared_reads(tuple(parts))  # once: `made` is asked twice
        if condition is not None:
            self.listing = (words, condition, tuple(seen.items()))

    def known(self, kept: object, words: tuple[bytes, ...], condition: object) -> dict[str, int]:
        """What the earlier entry's listing found of each file whose bytes are as they were
        (`Queries.changed_since` its revision: their digests), where it was asked the same
        words with the same noted test: that answer is a function of the path and text, so
        a cold run's listing finds the same. Nothing where the files are another list."""
        listing = kept.listing if isinstance(kept, Kept) else None
        earlier = self.earlier
        if listing is None or earlier is None or condition is None:
            return {}
        if listing[0] != words or listing[1] != condition:
            return {}
        changed = self.queries.changed_since(earlier.revision)
        if changed is None:
            return {}
        gone = set(changed)
        return {path: found for path, found in listing[2] if path not in gone}

    def computed(
        self,
        facts: ProjectFacts,
        lazy: LazyFiles,
        path: Path,
        answer_of: Callable[[FileFacts], Iterable[T]],
    ) -> Part:
        """The candidate's answer, computed on an evaluator of its own with reads of its own."""
        from amp_clipfix.analysis.lazy_files import Own

        watch, reads = self.queries.watch, self.queries.reads
        assert watch is not None  # a session is made only with the watch (Queries.session)
        collection = watch.collection
        state, errors = watch.state(), len(collection.errors)
        held, own = own_reads(reads), Own()
        lazy.own = own
        try:
            with own_evaluator(facts) as evaluator:
                file = lazy.get(path)
                answer = () if file is None else tuple(answer_of(file))
        finally:
            lazy.own = None
            fields, everything = merge(reads, held)
        whole = {p for p, parses in own.parsed.items() if parses}
        whole.update(p for p in own.loads if p in lazy.loaded)
        if evaluator is not None:
            whole.update(evaluator.summaries, evaluator.promised)
        return Part(
            str(path),
            answer,
            () if everything else fields,  # (): it read every text, never reused
            watch.left(state),
            tuple(collection.errors[errors:]),
            tuple(p for p in own.order if p in collection.searched),
            tuple((str(p), parses) for p, parses in own.parsed.items()),
            tuple(map(str, own.loads)),
            frozenset(map(str, whole)),
        )

    def holds(self, part: Part) -> bool:
        """The part may be reused: its own reads hold today, and computing it left nothing
        but what `put_back` puts back (the module's doc)."""
        from amp_clipfix.analysis.certificate import Left
        from amp_clipfix.analysis.query_checks import Answer

        left, earlier = part.left, self.earlier
        if earlier is None or part.errors or len(part.reads) != len(READ_FIELDS):
            return False
        if not (isinstance(left, Left) and left.clean and not left.fits and not left.questions):
            return False
        files, scans, found, derived, words, members, listed, tests = part.reads
        if words or listed:
            return False  # it read a list of the candidates, which the files loaded before join
        answer = Answer(
            earlier.revision, tuple(files), scans, found, derived, words, members, listed,
            tests, None, False, None, None,
        )  # fmt: skip
        return bool(self.queries.holds(answer))

    def put_back(self, facts: ProjectFacts, part: Part) -> None:
        """What the part's computation left, as computing it now would leave it: its reads,
        the files it asked for (parsed as they were: the settle's `parsed_before`; the others
        loaded again, in order, as they join later lists), its summaries as promised, its
        documents. The project's evaluator it never touched."""
        queries, watch = self.queries, self.queries.watch
        assert watch is not None
        note(queries.reads, part.reads)
        collection = watch.collection
        collection.promised.update(map(Path, part.whole))
        collection.parsed_before.update((Path(p), parses) for p, parses in part.parsed)
        for path in part.loads:
            facts.file(Path(path))
        for document in part.searched:
            collection.searched.setdefault(document, None)
