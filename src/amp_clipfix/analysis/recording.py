"""What a memoised query reads (queries.py): a recording of the project's texts that notes each
file read, each whole-project scan with the files it found, and each whole-project analysis
with its answer. Kept below the evaluator, which reads through it; the store that checks what
was recorded (queries.py) sits above the resolution."""

from __future__ import annotations

import re
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from pathlib import Path
from typing import Any, TypeVar

from amp_clipfix.sources.prefilter import python_text

T = TypeVar("T")

# A scan's test of one file's bytes: every condition holds. ("in", word): the bytes hold it;
# ("any", words): they hold one of them; ("re", pattern, flags): the pattern is found;
# ("fn", name, *args): `PREDICATES[name](path, bytes, *args)` says yes; ("raw", name, *args):
# the same of the bytes as stored (a test that reads them as Python's tokenizer does).
Condition = tuple[object, ...]
Test = tuple[Condition, ...]
# A search's own test of a file's path and text, made before it parses the file
# (facts.ProjectFacts.with_words): an edit that makes a file hold the search's words asks the
# search again whatever the test says, so it needs no note.
TextTest = Callable[[Path, bytes], bool]


def passes(test: Test, data: bytes, path: Path | None = None) -> bool:
    """Whether the text passes every condition, read as Python reads its names
    (`python_text`: a word spelled in letters NFKC folds to it is that word)."""
    stored, data = data, python_text(data)
    for condition in test:
        if condition[0] == "in":
            if data.find(condition[1]) < 0:  # type: ignore[arg-type]  # find: prefilter.holds
                return False
        elif condition[0] == "any":
            if not any(data.find(word) >= 0 for word in condition[1]):  # type: ignore[attr-defined]
                return False
        elif condition[0] in ("fn", "raw"):
            text = data if condition[0] == "fn" else stored
            if not predicate(str(condition[1]))(path, text, *condition[2:]):
                return False
        elif _compiled(condition).search(data) is None:
            return False
    return True


# name -> a test of one file (its path, its bytes, the condition's arguments), registered by the
# stage that asks it (gate_texts.py: may_name, may_import)
PREDICATES: dict[str, Callable[..., bool]] = {}
_patterns: dict[Condition, re.Pattern[bytes]] = {}
# Each predicate's name -> the module that registers it. A warm run checks a stored test on a
# changed file before the module that asks it may be imported (a rule's, imported when its
# search runs): then that module alone is imported. Importing the others in turn until the
# name was registered imported the evaluator (~20 ms) for a text test of manual_clips or
# fused_keys, or of document_texts (tests/test_predicate_modules.py checks the table).
PREDICATE_HOMES = {
    **dict.fromkeys(
        ("written", "imports", "referenced", "attribute_written", "written_free"),
        "amp_clipfix.analysis.text_tests",
    ),
    **dict.fromkeys(
        ("writes_scaled_backward", "writes_backward_with_arguments", "hands_backward_on"),
        "amp_clipfix.analysis.written_events",
    ),
    "candidate": "amp_clipfix.analysis.project_resolve",
    "may_call_plugin_class": "amp_clipfix.analysis.plugin_texts",
    **dict.fromkeys(("may_name", "may_import", "may_hold"), "amp_clipfix.analysis.gate_texts"),
    "binds_attribute_value": "amp_clipfix.analysis.reach",
    **dict.fromkeys(("writes_value", "imports_plainly"), "amp_clipfix.analysis.module_objects"),
    "writes_clip_name": "amp_clipfix.analysis.manual_clips",
    "fused_in_project_code": "amp_clipfix.analysis.fused_origins",
    "may_define_subclass": "amp_clipfix.analysis.resolve_optimizers",
    "may_write_document": "amp_clipfix.analysis.document_texts",
    "may_write_fused_key": "amp_clipfix.analysis.fused_keys",
    "may_write": "amp_clipfix.analysis.shape_texts",
    "call_test": "amp_clipfix.analysis.calls",
    "kept_call_test": "amp_clipfix.analysis.kept_call_test",
    "may_fail_to_parse": "amp_clipfix.analysis.questions",
    "may_decorate_with": "amp_clipfix.analysis.decoration_texts",
}
PREDICATE_MODULES = tuple(dict.fromkeys(PREDICATE_HOMES.values()))  # the registering modules
# The predicates whose first argument is another condition the text must pass first:
# `p(path, text, inner)` is `inner`'s answer and `p(path, text, None)`. A warm run's check asks
# the inner one apart (query_checks.asked_again), once a run for a file (the settle's
# `may_fail_to_parse` wraps ACF013's `kept_call_test`, which parses the file).
GUARDED = frozenset({"may_fail_to_parse"})


def predicate(name: str) -> Callable[..., bool]:
    """The registered test `name`, its module imported first when it is not yet."""
    found = PREDICATES.get(name)
    if found is None:
        import importlib

        if name in PREDICATE_HOMES:
            importlib.import_module(PREDICATE_HOMES[name])
        found = PREDICATES[name]  # a KeyError: a test no module registers (the entry misses)
    return found


def _compiled(condition: Condition) -> re.Pattern[bytes]:
    found = _patterns.get(condition)
    if found is None:
        found = _patterns[condition] = re.compile(condition[1], condition[2])  # type: ignore[call-overload]
    return found


def holds(word: bytes) -> Condition:
    return ("in", word)


def holds_any(words: tuple[bytes, ...]) -> Condition:
    return ("any", words)


def matches(pattern: re.Pattern[bytes]) -> Condition:
    return ("re", pattern.pattern, pattern.flags)


def matches_text(pattern: bytes) -> Condition:
    """matches(re.compile(pattern)), without compiling it (a bytes pattern has no flags)."""
    return ("re", pattern, 0)


class Reads:
    """What the queries of one run read so far."""

    def __init__(self) -> None:
        self.files: set[str] = set()  # paths as text: stored and compared as they are
        self.scans: dict[Test, frozenset[str]] = {}
        self.exists: dict[Test, str | None] = {}
        self.derived: dict[tuple[object, ...], object] = {}
        # The searching rules' candidate files (those whose bytes pass the test, no library
        # file nor config) as `Candidates` notes them: the words whose holders were asked (with
        # the noted form of the search's own text test, when it has one), the files asked for
        # that were no candidate, and the whole list where it was read.
        self.words: set[tuple[tuple[bytes, ...], Test, Condition | None]] = set()
        self.members: set[tuple[str, Test]] = set()
        self.listed: dict[Test, frozenset[str]] = {}
        # Tests of one file's text made instead of reading it (`tested`), with their results,
        # by file: a changed file counts only when one of them now gives another result.
        self.tests: dict[str, dict[Test, bool]] = {}
        self.everything = False
        # Not a read: which `exists` tests no file passes today, as the earlier entry of the
        # query being computed noted and the files changed since confirm (`known_absent`).
        self.absent: Absent | None = None
        # Not a read either: the relevance core a cold run computes today, as a reused entry's
        # noted one and the files changed since give it (derived.today_relevant), when known.
        self.relevant: object | None = None
        # Not a read: the computing query's answers per candidate file (candidate_answers.py).
        self.parts: object | None = None


class TextsView(Mapping[Path, bytes]):
    """A view of a project's texts by path (`data`): its file list is the texts' own."""

    def __init__(self, data: Mapping[Path, bytes]) -> None:
        self.data = data

    def __getitem__(self, path: Path) -> bytes:
        return self.data[path]

    def __contains__(self, path: object) -> bool:
        return path in self.data

    def __iter__(self) -> Iterator[Path]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


class Recording(TextsView):
    """A project's texts that note which files are read: one file's bytes (`[]`, `get`) are a
    read of that file; the whole text iterated (`items`, `values`) is a read of everything.
    The file list (`in`, iterating the paths) is part of every query's key."""

    def __init__(self, data: Mapping[Path, bytes], reads: Reads) -> None:
        super().__init__(data)
        self.reads = reads
        # The evaluator's texts, the only ones `scan` and `noted` are asked of: a scan's noted
        # answer may then be taken up again from an entry (`Absent.scanned`).
        self.scanned = False

    def __getitem__(self, path: Path) -> bytes:
        found = self.data[path]
        self.reads.files.add(str(path))
        return found

    def get(self, path: Path, default: object = None) -> bytes | None:  # type: ignore[override]
        if path in self.data:
            self.reads.files.add(str(path))
            return self.data[path]
        return default  # type: ignore[return-value]

    def items(self) -> ItemsView[Path, bytes]:
        self.reads.everything = True
        return self.data.items()

    def values(self) -> ValuesView[bytes]:
        self.reads.everything = True
        return self.data.values()


def raw(contents: Mapping[Path, bytes]) -> Mapping[Path, bytes]:
    """The texts themselves, read without being noted (a scan notes what it found)."""
    return contents.data if isinstance(contents, Recording) else contents


def python_texts(contents: Mapping[Path, bytes]) -> Mapping[Path, bytes]:
    """The texts as a test of a file's text reads them before the file is parsed: unnoted,
    as `raw`, and as Python reads their names (`python_text`), so that a test never refuses a
    file whose name the parser would find (`ｃfg` is `cfg`), and gives what `passes` gives."""
    return PythonNames(raw(contents))


class PythonNames(TextsView):
    """Texts by path, each as `python_text` gives it (the same bytes for nearly every text)."""

    def __getitem__(self, path: Path) -> bytes:
        return python_text(self.data[path])


def scan(contents: Mapping[Path, bytes], *test: Condition) -> list[Path]:
    """The files whose bytes pass every condition of `test`, in the project's order; noted
    with what they found."""
    found = earlier_scan(contents, test)
    if found is None:
        found = [path for path, data in raw(contents).items() if passes(test, data, path)]
    return noted(contents, test, found)


def earlier_scan(contents: Mapping[Path, bytes], test: Test) -> list[Path] | None:
    """`scan(contents, *test)`'s answer from the earlier entry's scan of the same test, while
    a query is computed again (`Absent.scanned`: only the files changed since are tested);
    None when not known so. Not noted: the caller notes what it found."""
    if isinstance(contents, Recording) and contents.scanned and contents.reads.absent is not None:
        return contents.reads.absent.scanned(test, contents.data)
    return None


def noted(contents: Mapping[Path, bytes], test: Test, found: Iterable[Path]) -> list[Path]:
    """`found`, computed by the caller as `scan(contents, *test)` would (an index, say), noted."""
    found = list(found)
    if isinstance(contents, Recording):
        contents.reads.scans[test] = frozenset(map(str, found))
    return found


def noted_again(contents: Mapping[Path, bytes], test: Test, found: list[Path]) -> list[Path]:
    """A scan's answer kept by the caller (a function of the texts), noted as `noted` noted it
    when the reads do not hold it yet (another computation made it: candidate_answers.py)."""
    if isinstance(contents, Recording) and test not in contents.reads.scans:
        contents.reads.scans[test] = frozenset(map(str, found))
    return found


def exists(contents: Mapping[Path, bytes], *test: Condition) -> bool:
    """Whether any file passes `test`; noted with the first that does (a later run looks again
    only when that one or a file that did not pass changed: `query_checks.still`). While a query
    is computed again or caught up, from its entry's witness (`Absent.first_passing`)."""
    texts = raw(contents)
    found = None
    if isinstance(contents, Recording) and contents.scanned and contents.reads.absent:
        found = contents.reads.absent.first_passing(test, texts)  # the evaluator's texts
    if found is None:
        found = next((path for path, data in texts.items() if passes(test, data, path)), None)
    if isinstance(contents, Recording):
        contents.reads.exists[test] = None if found is None else str(found)
    return found is not None


class Absent:
    """The `exists` tests no file passes today: those the earlier entry of the query being
    computed noted with no witness (`noted`: its `exists`) that no file changed since
    (`changed`: their texts, None when unread) passes. Each asked test is tested once, on the
    changed files only; a test that fails on one (a bug of ours) is no fact."""

    def __init__(
        self,
        noted: Mapping[Test, str | None],
        changed: Mapping[Path, bytes | None],
        scans: Mapping[Test, frozenset[str]] | None = None,
        witnesses: Mapping[Test, str | None] | None = None,
        tests: Mapping[str, Mapping[Test, bool]] | None = None,
    ):
        self.noted, self.changed = noted, changed
        # the entry's `exists` witnesses (`first_passing`): its `noted` unless given
        self.witnesses = noted if witnesses is None else witnesses
        self.known: dict[Test, bool] = {}
        self.scans = scans or {}  # the entry's scans (`scanned`)
        self.tests = tests or {}  # the entry's tests of one file's text (`earlier_result`)
        self.changed_names = frozenset(map(str, changed))
        # the texts `scanned` last placed: each file's name -> (its position, its path) (a scan
        # is over the evaluator's texts: the same mapping every time, placed once, not once a
        # scan)
        self.placed: tuple[Mapping[Path, bytes], int, dict[str, tuple[int, Path]]] | None = None

    def scanned(self, test: Test, texts: Mapping[Path, bytes]) -> list[Path] | None:
        """`scan`'s answer over `texts` from the entry's scan of the same test (the same list
        of files, and every scan is over the evaluator's texts: `Recording.scanned`): the
        files it found that did not change since, and the changed files that pass now, in the
        project's order; None when it made no such scan. A file's bytes decide whether it
        passes, so only the changed files are tested (a few instead of every file), and only
        those and the files found are looked at (by their positions), not every file."""
        found = self.scans.get(test)
        if found is None:
            return None
        changed = self.changed_names
        place = self.positions(texts)
        try:
            kept = [place[name] for name in found if name not in changed and name in place]
            kept += [
                place[name]
                for name in changed
                if name in place and passes(test, texts[place[name][1]], place[name][1])
            ]
        except Exception:  # noqa: BLE001 - no fact: every file is tested
            return None
        kept.sort()
        return [path for _, path in kept]

    def first_passing(self, test: Test, texts: Mapping[Path, bytes]) -> Path | None:
        """`exists`' witness over `texts` (the evaluator's) from the entry's witness `W` of
        the same test: the first changed file before `W` that passes, else `W` itself when it
        did not change (its bytes passed then, so they pass now). Every file before `W` failed
        then, so only the changed ones are tested. None when the entry noted no witness or
        `W` changed (or is no file of `texts`): every file is tested."""
        witness = self.witnesses.get(test)
        if witness is None or witness in self.changed_names:
            return None
        place = self.positions(texts)
        if witness not in place:
            return None
        last = place[witness][0]
        before = sorted(
            place[name] for name in self.changed_names if name in place and place[name][0] < last
        )
        try:
            for _, path in before:
                if passes(test, texts[path], path):
                    return path
        except Exception:  # noqa: BLE001 - no fact: every file is tested
            return None
        return place[witness][1]

    def earlier_result(self, name: str, test: Test) -> bool | None:
        """The result the entry noted for `test` of the file named `name` (`tested`) when the
        file did not change since: its bytes decide the result. None when not known so."""
        if name in self.changed_names:
            return None
        noted = self.tests.get(name)
        return None if noted is None else noted.get(test)

    def positions(self, texts: Mapping[Path, bytes]) -> dict[str, tuple[int, Path]]:
        """Each file of `texts` by its name: its position and path, made once for the same
        texts."""
        if self.placed is None or self.placed[0] is not texts or self.placed[1] != len(texts):
            self.placed = (texts, len(texts), {str(p): (i, p) for i, p in enumerate(texts)})
        return self.placed[2]

    def __call__(self, test: Test) -> bool:
        known = self.known.get(test)
        if known is None:
            try:
                known = test in self.noted and self.noted[test] is None
                known = known and not any(
                    data is not None and passes(test, data, path)
                    for path, data in self.changed.items()
                )
            except Exception:  # noqa: BLE001 - no fact: the files are tested
                known = False
            self.known[test] = known
        return known


def known_absent(contents: Mapping[Path, bytes], test: Test) -> bool:
    """No file passes `test` today (`Absent`, set while a query whose earlier entry no longer
    holds is computed again). A computation may take that as the answer instead of testing
    the files again, when what it leaves besides the answer is what the tests would leave."""
    if not isinstance(contents, Recording) or contents.reads.absent is None:
        return False
    return contents.reads.absent(test)


def earlier_witness(
    contents: Mapping[Path, bytes], test: Test
) -> tuple[str, frozenset[str]] | None:
    """The file the earlier entry of the query being computed again noted as the first that
    passes `exists` test `test` (its witness), with the files changed since (their names);
    None when there is no such entry or it noted no witness. A fact about that revision: every
    file before the witness in the project's order that did not change since still fails
    whatever the witness's test implies (the same list of files: `Queries.absent`)."""
    if not isinstance(contents, Recording) or contents.reads.absent is None:
        return None
    witness = contents.reads.absent.witnesses.get(test)
    return None if witness is None else (witness, contents.reads.absent.changed_names)


def earlier_result(contents: Mapping[Path, bytes], path: Path, test: Test) -> bool | None:
    """`tested`'s result for `test` of `path` as the earlier entry of the query being
    computed again noted it, the file unchanged since (`Absent.earlier_result`); None when not
    known so. Not noted: the caller notes what it asks as always."""
    if not isinstance(contents, Recording) or contents.reads.absent is None:
        return None
    return contents.reads.absent.earlier_result(str(path), test)


def tested(contents: Mapping[Path, bytes], path: Path, test: Test, result: bool) -> bool:
    """`result`, what `passes(test, contents[path], path)` gives (computed by the caller, or
    known from an earlier computation on the same bytes), noted as that test of the file's
    text, not as a read of it: what the caller does next may depend on the result alone."""
    if isinstance(contents, Recording) and path in contents.data:
        contents.reads.tests.setdefault(str(path), {})[test] = result
    return result


def read(contents: Mapping[Path, bytes], path: Path) -> None:
    """Note a read of `path` made other than through its bytes (its summary, its document)."""
    if isinstance(contents, Recording) and path in contents.data:
        contents.reads.files.add(str(path))


class Candidates:
    """What a search asks of the candidate files (`facts.LazyFiles`), noted: a file that holds
    one of `words` is read (its bytes, noted), one that does not only says so; a changed file
    counts when it is (now) a candidate that holds one (`query_checks.still`)."""

    def __init__(self, contents: Mapping[Path, bytes], test: Test) -> None:
        self.reads = contents.reads if isinstance(contents, Recording) else None
        self.test = test

    def words(self, words: tuple[bytes, ...], where: object = None) -> None:
        """The candidates whose document text holds one of `words` and passes the search's own
        text test `where` were asked for. A test noted by its `condition` (a registered
        predicate of the path and text alone: shape_texts.MayWrite, calls.CallTest) is asked
        again of a changed file; any other (or none) counts every holder of the words."""
        if self.reads is not None:
            condition = getattr(where, "condition", None)
            self.reads.words.add((words, self.test, condition))

    def member(self, path: Path) -> None:
        """`path`, no candidate, was asked for."""
        if self.reads is not None:
            self.reads.members.add((str(path), self.test))

    def listed(self, candidates: Iterable[Path]) -> None:
        """The whole list was read."""
        if self.reads is not None:
            self.reads.listed[self.test] = frozenset(map(str, candidates))


def derive(contents: Mapping[Path, bytes], key: tuple[object, ...], answer: object) -> None:
    """Note a whole-project analysis and its answer (`DERIVED[key[0]]` computes it again)."""
    if isinstance(contents, Recording):
        contents.reads.derived[key] = answer


# key[0] -> (every searchable file's text, the changed files' texts, the answer noted, *key[1:])
# -> whether the answer still holds on today's files (a changed file the analysis does not read,
# a config, may only make it say no)
DERIVED: dict[str, Callable[..., object]] = {}


READ_FIELDS = ("files", "scans", "exists", "derived", "words", "members", "listed", "tests")
READ_KINDS = (set, dict, dict, dict, set, set, dict, dict)


def restore(reads: Reads, fields: tuple[Any, ...]) -> None:
    """Set the read fields of `reads` to `fields` (`fields_of` taken before a computation
    whose reads the later ones do not count: queries.py `detach`)."""
    for name, kind, value in zip(READ_FIELDS, READ_KINDS, fields):
        setattr(reads, name, kind(value))
    reads.tests = {path: dict(tests) for path, tests in fields[7].items()}


def fields_of(reads: Reads) -> tuple[Any, ...]:
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
