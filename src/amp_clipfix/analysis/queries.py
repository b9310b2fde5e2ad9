"""Memoised project queries that record what they read (salsa's model, issue 35).

A query is one project-level answer: the trial resolution (which Trainer files matter), the
project resolution, the searching rules' findings. Each is stored in the cache with what it
read, and a later run reuses it when everything it read is as it was:

- `files`: the files whose text it read (a summary, a document, the bytes), by digest: a file
  whose hash changed invalidates it;
- `scans`: the text scans over every file (`scan`: which files hold a word, write it as a whole
  word, match a pattern), with the files they found: a scan is still right when every changed
  file gives the answer it gave before (so only the changed files are looked at again);
- `derived`: whole-project text analyses (`derive`: relevance.py's), with their answer: still
  right when computed again on today's files they give the same answer.

Every query also depends on the project's list of files and on the queries run before it in the
run (its key chains theirs), and what one query read counts for the later ones too (they may
reuse what the evaluator learnt for it): an added, removed or renamed file runs them all again.
A pure query (`found_in_files`: a text test of the files, no evaluator) is the exception: the
later ones depend on its answer, chained into their keys, not on what it read.
A read the recording cannot name (the whole project's text iterated outside a `scan`) marks the
run `everything`: nothing is stored.

The evaluator the queries share keeps its memos and spends one budget: a cut answer (a budget
spent, a bound met) depends on the work done before it. So every answer is computed on the
evaluator a cold run would have at that point: a query answered from the cache whose
computation moved the evaluator (`Answer.touched`) is computed again, its answer dropped, before
the first query of the run that is computed (`Queries.catch_up`), unless every such computation
was clean, whose memos it need not make again (certificate.py). Every computed answer is then
the cold run's, cut or not, and is stored. A cache is never a source of truth: an answer is
reused only when all of this holds, else it is computed as a cold run computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from amp_clipfix.analysis.query_entries import KINDS, SHARED_BYTES, Entry, Shared

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache
    from amp_clipfix.analysis.certificate import Watch
    from amp_clipfix.analysis.query_checks import Answer  # imported once an entry is loaded

from amp_clipfix.analysis.recording import (
    READ_FIELDS,
    Absent,
    Reads,
    Recording,
    Test,
    exists,
    fields_of,
    raw,
    restore,
)

T = TypeVar("T")


class Queries:
    """The memoised queries of one project's run."""

    def __init__(
        self,
        cache: Cache,
        contents: Mapping[Path, bytes],
        searchable: Mapping[Path, bytes],
        salt: str,
        evaluator: Callable[[], object | None],
        watch: Watch | None = None,
    ) -> None:
        self.cache, self.contents, self.searchable = cache, contents, searchable
        self.evaluator = evaluator  # the run's evaluator, None until one is made
        self.made: tuple[int, ...] | None = None  # certificate.own_footprint of it, as made
        # what each computation leaves (certificate.py); with it, a run may skip the catch-up
        self.watch = watch
        self.certifying = False  # computing on an evaluator the catch-up was skipped for
        import hashlib  # here: a run without the cache imports this module, never hashes

        self.reads = Reads()
        self.revision = {str(path): cache.digest(data) for path, data in contents.items()}
        listed = hashlib.sha256()
        for name, digest in sorted(self.revision.items()):
            listed.update(name.encode("utf-8", "surrogateescape") + b"\0" + digest)
        self.revision_key = f"revision-{listed.hexdigest()}"
        self.revisions: dict[str, dict[str, bytes] | None] = {}  # loaded, by key
        self.changed: dict[str, list[str] | None] = {}  # changed_since, by revision
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
        # The computations of the queries answered from the cache since the evaluator was last
        # as a cold run's, in order, that moved it: computed again before a query is computed.
        self.behind: list[tuple[Callable[[], object], Answer]] = []
        self.keys: set[str] = set()  # the entries this run read or wrote (pruning keeps them)
        self.shared: dict[str, object] = {}  # the `Shared` entries loaded or written, by key
        self.wrote = False
        self.moved = False  # some answer's computation moved the evaluator (reused or not)
        self.relevance_tried: set[str] = set()  # the revisions today_relevant started from
        self.derived_known: dict[tuple[object, ...], tuple[object, bool]] = {}  # still_holds
        self.tested: dict[tuple[Test, Path], bool] = {}  # a changed file's tests (`still`)

    def recording(self, data: Mapping[Path, bytes]) -> Recording:
        return Recording(raw(data), self.reads)

    def run(
        self,
        name: str,
        inputs: object,
        compute: Callable[[], T],
        replay: Callable[[T], None] | None = None,
        again: Callable[[], object] | None = None,
        stateful: bool = False,
        pure: bool = False,
        detach: bool = False,
    ) -> T:
        """The answer of query `name` on `inputs` (and the project's files): stored when every
        file it read is as it was, else computed (and stored when the reads were all noted).
        `replay` puts back what the computation left besides its answer; `again` computes it
        for the evaluator's sake alone (`catch_up`; `compute` when not given); `stateful`: it
        also leaves state the later queries read that `replay` does not put back (the files a
        search loaded): then it is computed again before a later query whether or not it moved
        the evaluator. `pure`: it reads only through a `recording` it makes and never the
        evaluator (`computed_pure`). `detach`: where its computation left nothing but what
        `Watch.effects` says (no move of the project's evaluator), the later queries count that
        value, chained into their keys, and not what it read (`detached`)."""
        import hashlib

        from amp_clipfix.analysis.cache import canonical

        digest = hashlib.sha256(f"{self.chain}\0{name}\0".encode())
        digest.update(repr(canonical(inputs)).encode("utf-8", "surrogateescape"))
        self.chain = digest.hexdigest()
        key = f"query-{self.chain}"
        self.keys.add(key)
        stored = self.answer(key)
        if stored is not None and self.reads.relevant is None:
            self.today_relevant(stored)
        if stored is not None and self.holds(stored):
            if pure:  # its answer, not what it read, is what the later queries depend on
                self.chain_answer(stored.value)
            elif stored.chained is not None:  # what it left, not what it read (`detached`)
                self.chain_answer(stored.chained)
            else:
                self.note(stored)
            self.reused.append(name)
            if isinstance(stored.parts, Shared):  # kept unloaded (candidate_answers.py)
                self.keys.add(stored.parts.key)
            if stored.touched:
                self.moved = True
                self.behind.append((compute if again is None else again, stored))
            if replay is not None:
                replay(stored.value)  # type: ignore[arg-type]
            return stored.value  # type: ignore[return-value]
        if pure:
            return self.computed_pure(key, compute)
        self.ready(stored)
        before = footprint(self.evaluator())
        state = None if self.watch is None else self.watch.state()
        self.reads.absent = None if stored is None else self.absent(stored)
        self.reads.parts = session = self.session(stored)
        held = fields_of(self.reads) if detach and state is not None else None
        marks = None if held is None or self.watch is None else self.watch.marks()
        try:
            value = compute()
        finally:
            self.reads.absent = self.reads.parts = None
        left = None if self.watch is None or state is None else self.watch.left(state)
        if self.certifying and (left is None or not left.clean):
            from amp_clipfix.analysis.certificate import Uncertified

            raise Uncertified  # its answer may not be the caught-up evaluator's
        touched = stateful or footprint(self.evaluator()) != before
        self.moved = self.moved or touched
        parts = None if session is None or session.made is None else self.share(session.made)
        chained = self.detached(held, state, marks, left)
        self.store(key, value, touched, left=left, parts=parts, chained=chained)
        if chained is not None and held is not None:  # the later ones count what it left
            restore(self.reads, held)
            self.chain_answer(chained)
        return value

    def detached(self, held: Any, before: Any, marks: Any, left: Any) -> object:
        """What a `detach` computation left, as a value the later queries chain instead of
        counting its reads (None: they count them). Sound as a pure query's answer is: the
        project's evaluator it did not move, and every later use of a file it parsed, loaded
        or summarised notes that file (LazyFiles, `Evaluator.summary`, callers.py's texts),
        so a later query's answer is a function of its own reads, those before this one and
        this value (certificate.Watch.effects)."""
        if held is None or self.reads.everything or self.watch is None:
            return None
        return self.watch.effects(before, marks, left)

    def session(self, stored: Answer | None) -> Any:
        """What a computation keeps per candidate file, reusing the earlier entry's parts where
        certain (candidate_answers.py); none without the certificate's watch."""
        if self.watch is None:
            return None
        from amp_clipfix.analysis.candidate_answers import Session

        return Session(self, stored)

    def ready(self, stored: Answer | None) -> None:
        """Before a query is computed: catch the evaluator up (`catch_up`), or, where every
        reused query behind it left a clean computation (and its own earlier one was clean,
        else it would likely not be now), put back what they left instead and compute on the
        evaluator as it is, each computation from here on watched (certificate.py)."""
        from amp_clipfix.analysis.certificate import Left, Uncertified

        if not self.behind:
            return
        lefts = [answer.left for _, answer in self.behind]
        clean = all(isinstance(left, Left) and left.clean and not left.fits for left in lefts) and (
            stored is None or isinstance(stored.left, Left) and stored.left.clean
        )
        if self.watch is not None and clean and self.watch.certify:
            detached = any(answer.chained is not None for _, answer in self.behind)
            held = fields_of(self.reads) if detached else None
            self.behind = []
            self.watch.put_back(lefts)  # type: ignore[arg-type]
            if held is not None:  # the files it loads: read by queries whose reads count
                restore(self.reads, held)  # already, or by one whose reads do not (`detached`)
            self.certifying = True
        elif self.certifying:
            raise Uncertified  # this evaluator lacks what a catch-up would compute
        else:
            self.catch_up()

    def absent(self, stored: Answer) -> Absent | None:
        """The `exists` tests of an entry that no longer holds (its query is computed again)
        that no file passes today: none did when it was stored (no witness), and no file
        changed since passes one (`recording.Absent`). Only for the same list of files.
        Facts about today's files, not reads: the computation notes what it asks as always."""
        changed = self.changed_since(stored.revision)
        if changed is None:
            return None
        texts = {Path(p): self.searchable.get(Path(p)) for p in changed}
        return Absent(stored.exists, texts, stored.scans, tests=stored.tests)

    def today_relevant(self, stored: Answer) -> None:
        """Keep the relevance core a cold run computes today (`Reads.relevant`) when an entry
        noted one (that entry holds or not) and it follows from the files changed since: the
        run then takes it instead of searching every text again (resolve_base.relevant_files).
        Only for the same list of files; tried once per earlier revision."""
        answer = stored.derived.get(("relevant",))
        if answer is None or stored.revision in self.relevance_tried:
            return
        self.relevance_tried.add(stored.revision)
        changed = self.changed_since(stored.revision)
        if changed is None:
            return
        edited = {Path(path): self.searchable.get(Path(path)) for path in changed}
        if any(data is None for data in edited.values()):
            return  # a file that cannot be read now leaves the core: searched again
        if edited:
            from amp_clipfix.analysis.derived import today_relevant

            try:
                answer = today_relevant(self.searchable, edited, answer)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - no fact: the texts are searched
                return
        self.reads.relevant = answer

    def note(self, stored: Answer) -> None:
        """What a reused answer read counts for the later queries (they share the evaluator)."""
        self.reads.files.update(stored.files)
        self.reads.scans.update(stored.scans)
        self.reads.exists.update(stored.exists)
        self.reads.derived.update(stored.derived)
        self.reads.words.update(stored.words)
        self.reads.members.update(stored.members)
        self.reads.listed.update(stored.listed)
        for path, tests in stored.tests.items():
            self.reads.tests.setdefault(path, {}).update(tests)

    def computed_pure(self, key: str, compute: Callable[[], T]) -> T:
        """A query that reads only through a recording it makes and never the evaluator (a
        text test of the files: `found_in_files`): computed on reads of its own, with no
        catching up (the evaluator is not its input), and stored with them alone. The later
        queries do not count its reads: they depend on its answer, chained into their keys, so
        an edit that changes what it read but not its answer (a first file that holds a word
        no longer does, another one does) reuses them (salsa's early cut-off)."""
        cumulative, self.reads = self.reads, Reads()
        before = footprint(self.evaluator())
        try:
            value = compute()
        finally:
            own, self.reads = self.reads, cumulative
        if footprint(self.evaluator()) != before:  # a bug of ours: never a wrong report
            raise RuntimeError("a pure query moved the evaluator")
        self.store(key, value, False, own)
        self.chain_answer(value)
        return value

    def chain_answer(self, value: object) -> None:
        import hashlib

        from amp_clipfix.analysis.cache import canonical

        digest = hashlib.sha256(f"{self.chain}\0=\0".encode())
        digest.update(repr(canonical(value)).encode("utf-8", "surrogateescape"))
        self.chain = digest.hexdigest()

    def catch_up(self) -> None:
        """Bring the evaluator to where a cold run has it: compute again, in order, the reused
        queries that moved it (a cold run computed them; their answers are known)."""
        behind, self.behind = self.behind, []
        for compute, stored in behind:
            # its entry holds: each scan it made finds what it found (Absent.scanned), each
            # `exists` witness still passes (Absent.first_passing: text tests, not the
            # evaluator's); no other fact is taken, the evaluator is made as a cold run makes it
            earlier = self.absent(stored)
            self.reads.absent = (
                None
                if earlier is None
                else Absent(
                    {}, earlier.changed, stored.scans, witnesses=stored.exists, tests=stored.tests
                )
            )
            held = None if stored.chained is None else fields_of(self.reads)  # not counted
            try:
                compute()
            finally:
                self.reads.absent = None
            if held is not None:
                restore(self.reads, held)

    def store(
        self,
        key: str,
        value: object,
        touched: bool,
        reads: Reads | None = None,
        left: object = None,
        parts: object = None,
        chained: object = None,
    ) -> None:
        reads = self.reads if reads is None else reads
        if reads.everything:
            return
        files = tuple(sorted(reads.files))
        if any(path not in self.revision for path in files):
            return  # a file outside the project's list: never reused
        if not self.wrote:  # the files' hashes, once per run for all its queries
            self.cache.store(self.revision_key, self.revision)
            self.keys.add(self.revision_key)
            self.wrote = True
        fields = (
            files,
            dict(reads.scans),
            dict(reads.exists),
            dict(reads.derived),
            set(reads.words),
            set(reads.members),
            dict(reads.listed),
            {path: dict(tests) for path, tests in reads.tests.items()},
        )
        derived = {name: self.share(answer) for name, answer in fields[3].items()}
        fields = (*fields[:3], derived, *fields[4:])
        shares = tuple(self.share(field) for field in fields)
        entry = Entry(self.revision_key, shares, value, touched, left, parts, chained)
        self.cache.store(key, entry)

    def share(self, field: object) -> object:
        """`field`, or the `Shared` entry that holds it when it is large (written once)."""
        from amp_clipfix.analysis.cache import pickled, shared_key  # a --no-cache run: neither

        try:
            data = pickled(field)
        except Exception:  # noqa: BLE001 - Cache.store leaves out what cannot be pickled
            return field
        if len(data) < SHARED_BYTES:
            return field
        key = shared_key(data)
        if key not in self.shared:
            self.cache.store_pickled(key, data)
            self.shared[key] = field
        self.keys.add(key)
        return Shared(key)

    def answer(self, key: str) -> Answer | None:
        """The stored answer of `key`, its shared read fields loaded (once a run each); None
        when there is none, or a part is gone or not what the field holds."""
        stored = self.cache.load(key)
        if not isinstance(stored, Entry) or len(stored.reads) != len(READ_FIELDS):
            return None
        from amp_clipfix.analysis.query_checks import Answer

        fields: list[Any] = []
        for part, kind in zip(stored.reads, KINDS):
            part = self.shared_part(part)
            if not isinstance(part, kind):
                return None
            fields.append(part)
        files, scans, found, derived, words, members, listed, tests = fields
        derived = {name: self.shared_part(answer) for name, answer in derived.items()}
        if any(answer is None for answer in derived.values()):
            return None  # a shared answer gone
        return Answer(
            stored.revision,
            files,
            scans,
            found,
            derived,
            words,
            members,
            listed,
            tests,
            stored.value,
            stored.touched,
            stored.left,
            stored.parts,
            stored.chained,
        )

    def shared_part(self, part: object) -> object:
        """`part`, or what the `Shared` entry it is holds (loaded once a run; None: gone)."""
        if isinstance(part, Shared):
            if part.key not in self.shared:
                self.shared[part.key] = self.cache.load(part.key)
            self.keys.add(part.key)
            return self.shared[part.key]
        return part

    def changed_since(self, key: str) -> list[str] | None:
        """The files whose digest changed since revision `key`, in the project's order (once a
        run per revision); None when it is gone or has another list of files."""
        if key not in self.changed:
            then = self.stored_revision(key)
            same_files = then is not None and then.keys() == self.revision.keys()
            self.changed[key] = (
                [path for path, digest in self.revision.items() if then[path] != digest]  # type: ignore[index]
                if same_files
                else None
            )
        return self.changed[key]

    def stored_revision(self, key: str) -> dict[str, bytes] | None:
        if key not in self.revisions:
            value = self.cache.load(key)
            self.revisions[key] = value if isinstance(value, dict) else None
            self.keys.add(key)
        return self.revisions[key]

    def prune(self) -> None:
        """Once the run is done: the query entries it neither read nor wrote go, but the
        newest few (another command's, the pre-commit hook's), when it wrote any."""
        if self.wrote:
            self.cache.prune_queries(self.keys)

    def holds(self, stored: Answer) -> bool:
        """`query_checks.still`, and no when it fails: a stored entry never breaks a run."""
        from amp_clipfix.analysis.query_checks import still

        try:
            changed = self.changed_since(stored.revision)
            then = self.stored_revision(stored.revision)
            if changed is None or then is None:
                return False
            if any(then[path] != self.revision[path] for path in stored.files):
                return False
            texts = {Path(path): self.searchable.get(Path(path)) for path in changed}
            return still(
                stored, texts, self.contents, self.searchable, self.derived_known, self.tested
            )
        except Exception:  # noqa: BLE001 - a miss, whatever fails: the query is computed
            return False


def footprint(evaluator: object | None) -> tuple[int, ...] | None:
    """What moves when the evaluator works: its evaluations entered, cuts, budget, and the size
    of every memo and index it keeps (None: not made yet)."""
    if evaluator is None:
        return None
    state = vars(evaluator)
    sizes = sum(len(v) for v in state.values() if isinstance(v, (dict, list, set)))
    return (state.get("serial", 0), state.get("cuts", 0), state.get("budget", 0), sizes)


def found_in_files(
    queries: Queries | None, searchable: Mapping[Path, bytes], predicate: str, items: Iterable[T]
) -> frozenset[T]:
    """The items for which some file passes `("fn", predicate, item)` (`recording.PREDICATES`):
    a query named `predicate`, each answer noted with the first file that passes, so after an
    edit only the changed files are tested again."""
    asked = sorted(set(items))  # type: ignore[type-var]

    def compute() -> frozenset[T]:
        texts = searchable if queries is None else queries.recording(searchable)
        return frozenset(item for item in asked if exists(texts, ("fn", predicate, item)))

    return compute() if queries is None else queries.run(predicate, asked, compute, pure=True)
