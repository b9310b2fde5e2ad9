"""A search's answer per candidate file, kept with what it read up to that file (issue 35).

A search that reads its candidate files one by one in path order (ACF011's calls) is a query
(queries.py): one edited file it read computes it again whole, every candidate parsed again.
Its entry now also keeps, per candidate, that candidate's answer and what the search read and
left while it answered it (`Part`). When the query is computed again, the candidates before
the first one whose reads an edit touched are answered from the earlier entry, unparsed.

Why it is sound. What a computation gives is a function of what it read (the files, scans,
tests, candidate lists of `recording.Reads`) on a cold run's evaluator: the queries' own
premise. The search's answer for candidate i is a function of everything read up to its end:
the reads at the search's start (`base`), what the list of candidates read (`head`, its words)
and the parts 0..i. So a part is reused only when the earlier `base` is today's (the same
reads, and no file they read changed: everything before the search is as it was; a module the
search follows a spread into, loaded before it, is in `base`, not in the part that meets it
again), each part up to it still holds
(`Queries.holds`), and no changed file that sorts before it is a candidate holding the words
now (the list up to it is the same: `candidates_hold` on those files alone). Those are prefix
reads, not a candidate's own: a memo hit notes nothing of what its value read, and the
evaluator's budget and cycles depend on the work before, so a later candidate's own reads
alone would not do.

The candidates reused are not computed, so the later ones run on an evaluator without their
memos: the catch-up's certificate (certificate.py) decides that, as for a reused query. Each
part reused must have left a clean computation; what it left is put back (`Watch.put_back`,
its errors and documents), and every computation from there on is watched
(`Queries.certifying`): one that is not clean throws the attempt away, and the project is
analysed again with the catch-up and no part reused. Any other condition failing computes the
search whole, as before.

A file whose answer is a function of its bytes alone (ACF011's YAML configs) is kept by their
digest instead (`answers_by_text`): reused wherever those bytes and the answer's other inputs
(`detail`) are as they were, whatever else changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from amp_clipfix.analysis.word_holders import holders
from amp_clipfix.records import record

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import FileFacts, LazyFiles, ProjectFacts
    from amp_clipfix.analysis.query_checks import Answer
    from amp_clipfix.analysis.recording import Reads

T = TypeVar("T")
Fields = tuple[Any, ...]  # the read fields of `Reads`, in queries.READS order
# a file's answer by its bytes: its path, their digest, what else it depends on, the answer
Text = tuple[str, bytes, object, tuple[object, ...]]


@record(frozen=True)
class Part:
    """One candidate's answer and what the search read and left while it answered it."""

    path: str
    answer: tuple[object, ...]
    reads: Fields  # read since the candidate was listed (`since`)
    left: object  # certificate.Left
    errors: tuple[object, ...]  # the errors it reported (files that do not parse)
    searched: tuple[Path, ...]  # the documents it read (`Collection.searched`)


@record(frozen=True)
class Kept:
    """An entry's answers per candidate: the reads at the search's start, the list's own
    reads, and each candidate's part in path order."""

    base: tuple[object, ...]  # each field, or the `queries.Shared` entry that holds it
    head: Fields | None  # None: the search listed no candidate
    parts: tuple[Part, ...]
    # per file answered by its bytes alone (`answers_by_text`)
    texts: tuple[Text, ...] = ()


def answers_by_file(
    facts: ProjectFacts,
    words: tuple[bytes, ...],
    where: Any,
    answer_of: Callable[[FileFacts], Iterable[T]],
) -> Iterator[T]:
    """`answer_of` each file `facts.with_words(*words, where=where)` gives, in order; within a
    memoised query, kept per file and reused where it is certain (`Session`)."""
    from amp_clipfix.analysis.facts import LazyFiles

    lazy = facts.files
    reads = lazy.noted.reads if isinstance(lazy, LazyFiles) else None
    session = None if reads is None else reads.parts
    if not isinstance(session, Session) or session.started:
        for file in facts.with_words(*words, where=where):
            yield from answer_of(file)
        return
    yield from session.answers(lazy, words, where, answer_of)  # type: ignore[arg-type]


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


def snapshot(reads: Reads) -> Fields:
    """Where each read field of `reads` stands: a copy of each set, the length of each dict
    (of each file's tests too)."""
    return (
        set(reads.files),
        len(reads.scans),
        len(reads.exists),
        len(reads.derived),
        set(reads.words),
        set(reads.members),
        len(reads.listed),
        {path: len(tests) for path, tests in reads.tests.items()},
    )


def since(before: Fields, reads: Reads) -> Fields:
    """What `reads` gained since `before` (a `snapshot`). A read's key is a function of
    today's texts (asked again, it notes the same value), so a field only grows, and a dict
    keeps its keys' order: what it gained follows the keys it had."""
    fields: tuple[Any, ...] = (
        reads.files,
        reads.scans,
        reads.exists,
        reads.derived,
        reads.words,
        reads.members,
        reads.listed,
    )
    gained: list[object] = []
    for old, new in zip(before, fields):
        if isinstance(new, set):
            gained.append(frozenset(new - old))
        else:
            gained.append(dict(islice(new.items(), old, None)))
    counts, tests = before[7], reads.tests
    added = {path: dict(results) for path, results in islice(tests.items(), len(counts), None)}
    for path, results in islice(tests.items(), len(counts)):
        if len(results) != counts[path]:
            added[path] = dict(islice(results.items(), counts[path], None))
    gained.append(added)
    return tuple(gained)


def fields_of(reads: Reads) -> Fields:
    """All that `reads` holds, its sets frozen (the reads at a search's start)."""
    return (
        frozenset(reads.files),
        dict(reads.scans),
        dict(reads.exists),
        dict(reads.derived),
        frozenset(reads.words),
        frozenset(reads.members),
        dict(reads.listed),
        {path: dict(tests) for path, tests in reads.tests.items()},
    )


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


class Session:
    """One computation of a query: the earlier entry's parts it may reuse, and the parts it
    makes (stored with its entry when it ends)."""

    def __init__(self, queries: Any, earlier: Answer | None) -> None:  # queries.Queries
        self.queries, self.earlier = queries, earlier
        self.started = False  # one search a query (a second one computes whole, unkept)
        self.searched: Kept | None = None  # what the search by candidate made
        self.kept: object = None  # the earlier entry's `Kept`, loaded once (`earlier_kept`)
        self.loaded = False
        self.texts: dict[str, Text] = {}  # the answers kept by bytes this computation made
        self.by_name: dict[str, Text] | None = None  # the earlier entry's, by path
        self.reused = 0  # the candidates answered from the earlier entry (for the tests)

    @property
    def made(self) -> Kept | None:
        """What the entry keeps: the search's parts and the answers kept by bytes."""
        texts = tuple(self.texts.values())
        if self.searched is None:
            return Kept((), None, (), texts) if texts else None
        return Kept(self.searched.base, self.searched.head, self.searched.parts, texts)

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
        lazy: LazyFiles,
        words: tuple[bytes, ...],
        where: Any,
        answer_of: Callable[[FileFacts], Iterable[T]],
    ) -> Iterator[T]:
        self.started = True
        queries, watch = self.queries, self.queries.watch
        assert watch is not None  # a session is made only with the watch (Queries.session)
        reads = queries.reads
        base, start = fields_of(reads), snapshot(reads)
        kept = self.earlier_kept()
        reusable = self.reusable(kept, base) if isinstance(kept, Kept) else 0
        parts: list[Part] = []
        head: Fields | None = None
        for index, path in enumerate(holders(lazy, words, where)):
            if head is None:
                head = since(start, reads)
                if not isinstance(kept, Kept) or head != kept.head:
                    reusable = 0
            if index < reusable and isinstance(kept, Kept):
                part = kept.parts[index]
                if part.path != str(path):  # the checks say it cannot: computed whole again
                    from amp_clipfix.analysis.certificate import Uncertified

                    raise Uncertified
                self.put_back(part)
                parts.append(part)
                self.reused += 1
                yield from part.answer  # type: ignore[misc]
                continue
            before, state, collection = snapshot(reads), watch.state(), watch.collection
            errors, searched = len(collection.errors), len(collection.searched)
            file = lazy.get(path)
            answer = () if file is None else tuple(answer_of(file))
            gained = since(before, reads)
            added = tuple(islice(collection.searched, searched, None))  # a dict: keys in order
            made = tuple(collection.errors[errors:])
            parts.append(Part(str(path), answer, gained, watch.left(state), made, added))
            yield from answer
        if head:
            shared = tuple(queries.share(field) for field in base)
            self.searched = Kept(shared, head, tuple(parts))

    def reusable(self, kept: Kept, base: Fields) -> int:
        """How many of `kept`'s parts, from the first, hold today (the module's doc)."""
        from amp_clipfix.analysis.certificate import Left
        from amp_clipfix.analysis.query_checks import Answer, candidates_hold

        queries, earlier = self.queries, self.earlier
        if earlier is None or queries.watch is None or not queries.watch.certify:
            return 0
        if kept.head is None:
            return 0  # it listed no candidate
        if queries.reads.everything or any(kept.head[i] for i in (0, 1, 2, 3, 5, 6, 7)):
            return 0  # the list of candidates reads its words alone
        stored = tuple(queries.shared_part(field) for field in kept.base)
        if stored != base:
            return 0
        changed = queries.changed_since(earlier.revision)
        if changed is None or not base[0].isdisjoint(changed):
            return 0  # a file read before the search changed (its parts may meet it unnoted)
        texts = {Path(p): queries.searchable.get(Path(p)) for p in changed}

        def answer(fields: Fields) -> Answer:
            files, scans, found, derived, words, members, listed, tests = fields
            return Answer(
                earlier.revision, tuple(files), scans, found, derived, words, members, listed,
                tests, None, False, None, None,
            )  # fmt: skip

        listing = answer(kept.head)
        count = 0
        for part in kept.parts:
            left = part.left
            if not (isinstance(left, Left) and left.clean and not left.fits):
                break
            if not queries.holds(answer(part.reads)):
                break
            earlier_texts = {p: t for p, t in texts.items() if str(p) <= part.path}
            if earlier_texts and not candidates_hold(listing, earlier_texts, queries.contents):
                break
            count += 1
        return count

    def put_back(self, part: Part) -> None:
        """What the part's computation left, as computing it would leave it but for the
        memos; every computation after it is watched (certificate.py)."""
        queries, watch = self.queries, self.queries.watch
        assert watch is not None
        note(queries.reads, part.reads)
        watch.put_back([part.left])
        watch.collection.errors.extend(part.errors)
        for path in part.searched:
            watch.collection.searched.setdefault(path, None)
        queries.certifying = True
