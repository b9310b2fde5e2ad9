"""The catch-up's certificate (issue 35): when a warm run may compute a query on an evaluator
the reused queries before it did not move, and what they left that must be put back.

`Queries.catch_up` computes the reused queries again before the first computed one so that it
runs on the evaluator a cold run has. That is needed only where an answer depends on the work
done before it: a value the evaluator cut (a budget, a bound) or met in a cycle (where a cycle
is entered decides its head's value). Every other memo is a function of its key and the files
it read (frame.py `recall`). So each computed query notes what it `Left`: whether it was
`clean` (no value of its computation was cut, met a cycle or raised: `EvaluatorBase.unclean`
did not move, nor `cuts`), whether it listed the fits, the evaluations it spent, the summaries
it made, and what the rules' facts gained (files loaded, candidates parsed, questions). When
every reused query behind the first computed one left a clean computation, a run skips their
catch-up: it puts back what they left (the budget they spent, their summaries as promised,
their loaded files, their parsed candidates and questions for the settle) and computes on the
evaluator as it is. A clean computation there meets the values the caught-up evaluator holds
(each its key's) or computes them as their queries did, so it gives the caught-up answer: it
spends no less, nests no less deep and meets every cycle the caught-up one would meet. Any
computation there that is not clean throws the whole attempt away (`Uncertified`: the project
is analysed again with the catch-up, pipeline.py): no answer comes from it.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amp_clipfix.function_names import stored_name
from amp_clipfix.records import record

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import ProjectFacts

BUDGET = 400_000  # frame.BUDGET (frame.py imports ast and the evaluator's values)
# What an evaluator of its own shares with the project's (project_resolve.isolated_evaluator_of):
# functions of the files' bytes and list, each use noted where it is made (the module names, the
# word index, the texts noted, the loader's note of a promise, and the text answers of
# callers.py, each noted again at every use).
SHARED_FIELDS = (
    "contents", "size", "by_module", "module_tails", "word_index", "promise_load",
    "word_files", "name_files", "written_texts", "import_index",
)  # fmt: skip


class Uncertified(BaseException):  # noqa: N818 - not an error: the run starts again
    """A computation on an evaluator not caught up was not clean: the project is analysed
    again with the catch-up. A BaseException: the stages' guards (`except Exception`) turn a
    failure into an error line, this must pass them."""


@record(frozen=True)
class Left:
    """What a query's computation left for the later ones besides its memos (its entry's)."""

    clean: bool  # no value cut, met in a cycle or raised; its questions storable
    fits: bool  # it listed the project's fits (`ProjectFacts.fits`: kept, not put back)
    spent: int  # evaluations of the project's budget
    summaries: frozenset[str]  # the evaluator's `has_summary` files it added
    whole: frozenset[str]  # files it parsed whole (the settle's `parsed_whole`)
    loaded: tuple[str, ...]  # files the rules' facts loaded (`LazyFiles.loaded`), in order
    parsed: tuple[tuple[str, bool], ...]  # candidates it read (`LazyFiles.done`), parsed or not
    questions: tuple[tuple[tuple[bytes, ...], tuple[object, ...]], ...]  # words, `form`


class Watch:
    """One project's view of what a query's computation leaves (the run's collection, and
    the rules' facts once they are made)."""

    def __init__(self, collection: Any, make: Callable[[], Any], certify: bool) -> None:
        self.collection = collection  # collection.Collection (which imports the queries)
        self.make = make  # the project's evaluator, made as a cold run's first query makes it
        self.certify = certify  # a computation may skip the catch-up (not once it failed)
        self.facts: ProjectFacts | None = None

    def state(self) -> tuple[Any, ...]:
        """What `left` compares: counters, and the sets it takes differences of."""
        evaluator, collection = self.collection.evaluator, self.collection
        lazy = self.lazy()
        return (
            0 if evaluator is None else evaluator.unclean,
            0 if evaluator is None else evaluator.cuts,
            BUDGET if evaluator is None else evaluator.budget,
            set() if evaluator is None else {*evaluator.summaries, *evaluator.promised},
            {p for p, s in collection.summaries.items() if s is not None} | collection.promised,
            {} if lazy is None else dict.fromkeys(lazy.loaded),
            {} if lazy is None else dict(lazy.done),
            {} if lazy is None else dict.fromkeys(lazy.questions.refused),
            self.facts is not None and self.facts._fits is not None,
            len(collection.late),
            dict(collection.parsed_before),  # put back by a reused part (candidate_answers.py)
        )

    def marks(self) -> tuple[Any, ...]:
        """What `effects` compares besides a `state()`: what moves in the project's evaluator,
        the facts' manual word and configs, the errors and documents so far."""
        facts, collection = self.facts, self.collection
        return (
            own_footprint(collection.evaluator),
            None if facts is None else (facts._manual_word, len(facts.configs)),
            len(collection.errors),
            len(collection.searched),
        )

    def left(self, before: tuple[Any, ...]) -> Left:
        """What the computation since `before` (a `state()`) left."""
        after = self.state()
        asked = [question for question in after[7] if question not in before[7]]
        questions = tuple((words, form(where)) for words, where in asked)
        # a file that does not parse, read for the rules but no candidate of theirs: its error
        # waits for the settle (`Collection.late`), which a put-back would not repeat
        strays = after[9] != before[9]
        clean = (
            after[0] == before[0]
            and after[1] == before[1]
            and not strays
            and all(shape != UNSTORED for _, shape in questions)
        )
        return Left(
            clean,
            after[8] != before[8],
            before[2] - after[2],
            frozenset(map(str, after[3] - before[3])),
            frozenset(map(str, after[4] - before[4])),
            tuple(str(path) for path in after[5] if path not in before[5]),
            tuple(
                (str(p), f is not None) for p, f in after[6].items() if p not in before[6]
            )  # a part's put back as it was parsed (parsed_before), after the parsed ones
            + tuple(
                (str(p), parsed)
                for p, parsed in after[10].items()
                if p not in before[10] and p not in after[6]
            ),
            questions,
        )

    def effects(self, before: tuple[Any, ...], marks: tuple[Any, ...], left: Left) -> object:
        """What the computation since `before` and `marks` (its `left`) left that a later
        query sees, as a value (queries.py `detach`): the files it loaded, in order, the
        candidates it read and whether each parses (read now or put back as read:
        `parsed_before`), the files whose
        summary it made or promised, the questions it asked and the documents it read. None
        when it left more: it moved the project's evaluator (its memos, budget, cuts, from
        where it was or was made: only the fields an evaluator of its own shares, functions of
        the files' bytes noted at each use, may grow), listed the fits, asked for the manual
        word, read a config, reported an error or was not clean."""
        if not left.clean or left.fits or self.facts is None:
            return None
        made = marks[0] if marks[0] is not None else self.collection.queries.made
        if (made, *marks[1:3]) != self.marks()[:3]:
            return None
        was, now = known(before), known(self.state())
        searched = itertools.islice(self.collection.searched, marks[3], None)
        return (
            left.loaded,
            tuple(sorted((str(p), parses) for p, parses in now.items() if p not in was)),
            tuple(sorted(left.whole)),
            left.questions,
            tuple(sorted(map(str, searched))),
        )

    def lazy(self) -> Any:
        from amp_clipfix.analysis.facts import LazyFiles

        files = None if self.facts is None else self.facts.files
        return files if isinstance(files, LazyFiles) else None

    def put_back(self, lefts: Iterable[Left]) -> None:
        """Leave the project's evaluator and facts as the catch-up of these computations would
        leave them, but for their memos (which a clean computation makes again as they were)."""
        lefts = list(lefts)
        evaluator, collection, lazy = self.make(), self.collection, self.lazy()
        for left in lefts:
            evaluator.budget -= left.spent
            evaluator.promised.update(
                Path(p) for p in left.summaries if Path(p) not in evaluator.summaries
            )
            collection.promised.update(map(Path, left.whole))
            collection.parsed_before.update((Path(p), parsed) for p, parsed in left.parsed)
            if lazy is not None:
                for words, shape in left.questions:
                    lazy.questions.asked(words, test_of(shape))
                # loaded again in order, as the catch-up loads them, each read when asked for
                for loaded in map(Path, left.loaded):
                    lazy.promise(loaded)
                    if loaded not in collection.parsed:  # its document (`read` makes it then)
                        collection.searched.setdefault(loaded, None)
            elif self.facts is not None:
                for path in left.loaded:
                    self.facts.file(Path(path))


def known(state: tuple[Any, ...]) -> dict[Path, bool]:
    """The candidates read by a `Watch.state()`, parsed or put back as parsed, and whether
    each parses."""
    return {**state[10], **{path: read is not None for path, read in state[6].items()}}


def own_footprint(evaluator: object | None) -> tuple[int, ...] | None:
    """queries.footprint of the project's evaluator without the fields an evaluator of its
    own shares with it (SHARED_FIELDS: they grow with what any computation asked, each entry
    a function of the files' bytes, noted again at every use)."""
    if evaluator is None:
        return None
    state = vars(evaluator)
    sizes = sum(
        len(value)
        for name, value in state.items()
        if isinstance(value, (dict, list, set)) and name not in SHARED_FIELDS
    )
    return (state.get("serial", 0), state.get("cuts", 0), state.get("budget", 0), sizes)


UNSTORED: tuple[object, ...] = ("unstored",)


def form(where: object) -> tuple[object, ...]:
    """A question's text test as an entry stores it: none, its noted `condition` (a registered
    predicate of the path and text), a test that lets no file through (`never`), or a function
    of ours by name; UNSTORED for any other (its query is then not clean)."""
    if where is None:
        return ("none",)
    condition = getattr(where, "condition", None)
    if condition is not None:
        return ("condition", condition)
    if getattr(where, "never", False):
        return ("never",)
    named = stored_name(where)
    return UNSTORED if named is None else ("function", *named)


def test_of(shape: tuple[object, ...]) -> Any:
    """The text test a stored `form` names (what the settle asks of a file)."""
    kind = shape[0]
    if kind == "none":
        return None
    if kind == "never":
        return never
    if kind == "function":
        return getattr(importlib.import_module(str(shape[1])), str(shape[2]))
    return Noted(shape[1])  # type: ignore[arg-type]


def never(path: Path | None, data: bytes) -> bool:
    """A question's test that lets no file through (cli_config.names_cli's)."""
    return False


never.never = True  # type: ignore[attr-defined]


class Noted:
    """A text test by its noted condition (`("fn", name, *arguments)`), as a query's check
    asks it again of a changed file (query_checks.asked_again)."""

    def __init__(self, condition: tuple[object, ...]) -> None:
        self.condition = condition

    def __call__(self, path: Path | None, data: bytes) -> bool:
        from amp_clipfix.analysis.recording import predicate

        return bool(predicate(str(self.condition[1]))(path, data, *self.condition[2:]))
