"""The reach index's value question (analysis/reach.py `value_files`) after an edit: the earlier
entry's witness (the first file that stores the name, `x.name = v`) is taken again when it did
not change, and only the changed files before it are tested (`still_first_store`); the free
writing test is one search (`written_free`). Same answers as listing every file; from the
command line, a cold run's bytes."""

from __future__ import annotations

import ast
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_incremental import same_as_cold, write
from test_local_receivers import every_helper
from test_reach import ENGINE, OPS, TRAIN

from amp_clipfix.analysis import event_capable, reach
from amp_clipfix.analysis.bound_names import attribute_targets
from amp_clipfix.analysis.reach import (
    VALUE_BOUND,
    binds_attribute_value,
    still_first_store,
    stored_text,
    written_free,
)
from amp_clipfix.analysis.recording import Absent, Reads, Recording, exists, holds, passes


def listed_free(name: str, data: bytes) -> bool:
    """`written_free` as it was written before: the word counted, then each occurrence read."""
    word = name.encode("ascii")
    if data.count(word) <= data.count(b"." + word + b"("):
        return False
    for match in re.finditer(re.escape(word) + rb"(?!\w)", data):
        before = data[match.start() - 1 : match.start()]
        if before.isalnum() or before == b"_":
            continue
        if before != b"." or not data.startswith(b"(", match.end()):
            return True
    return False


def test_the_free_writing_test_is_the_occurrences_read_one_by_one() -> None:
    """Random texts of the name's bytes and what may stand around them (longer names, dots,
    calls, other bytes): one search answers as reading every occurrence did."""
    generator = random.Random(35)
    alphabet = [b"a", b"b", b"_", b".", b"(", b" ", b"\n", b"=", b"1", b"\xc3\xa9"]
    for _ in range(40_000):
        data = b"".join(generator.choice(alphabet) for _ in range(generator.randrange(0, 14)))
        for name in ("a", "ab", "a_", "_a", "aa"):
            assert written_free(name, data) == listed_free(name, data), (name, data)


LINES = [
    "x.log_stats = report",  # a store: a witness without a parse
    "engine.log_stats(loss)",  # a method call: not written freely
    "print(log_stats)",  # written freely, no store
    "run(log_stats=1)",  # a keyword with an inert value: no store by the text
    "value = 1",
]
NAME = "log_stats"
TEST = (holds(NAME.encode("ascii")), ("fn", VALUE_BOUND, NAME))


def first_store(texts: dict[Path, bytes]) -> Path | None:
    """A cold run's witness without a parse: the first file written freely that stores."""
    return next(
        (p for p, d in texts.items() if written_free(NAME, d) and stored_text(NAME, d)), None
    )


def noted_witness(texts: dict[Path, bytes]) -> Path | None:
    """What an entry notes: the first store, else the first file the parse finds binding it."""
    found = first_store(texts)
    if found is None:
        found = next((p for p, d in texts.items() if binds_attribute_value(p, d, NAME)), None)
    return found


def test_the_earlier_witness_gives_today_s_first_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random files, a witness noted on them, random edits: where `still_first_store` answers,
    it is the first store of today's texts; it answers wherever the witness still stores and
    no file before it changed; it tests only the changed files and the witness."""
    generator = random.Random(36)
    tested: list[Path] = []
    names: dict[int, Path] = {}  # id of a text -> its file

    def spied(name: str, data: bytes) -> bool:
        if names:  # asked by `still_first_store` (not by the predicate `noted_witness` asks)
            tested.append(names[id(data)])
        return written_free(name, data)

    monkeypatch.setattr(reach, "written_free", spied)
    answered = 0
    for _ in range(400):
        paths = [tmp_path / f"m{i}.py" for i in range(6)]
        then = {p: "\n".join(generator.sample(LINES, 2)).encode() for p in paths}
        witness = noted_witness(then)
        if witness is None:
            continue
        today = dict(then)
        for path in generator.sample(paths, generator.randrange(0, 3)):
            today[path] = "\n".join(generator.sample(LINES, 2)).encode()
        changed = {p: today[p] for p in paths if today[p] != then[p]}
        reads = Reads()
        reads.absent = Absent({TEST: str(witness)}, changed)
        contents = Recording(today, reads)
        naming = [p for p, d in today.items() if NAME.encode() in d]
        tested.clear()
        names.clear()
        names.update((id(d), p) for p, d in today.items())
        found = still_first_store(NAME, TEST, naming, contents)
        names.clear()
        assert set(tested) <= {*changed, witness}
        if found is not None:
            answered += 1
            assert found == first_store(today)
        before = paths[: paths.index(witness)]
        kept = witness not in changed and not any(p in changed for p in before)
        if kept and stored_text(NAME, then[witness]):
            assert found == witness
    assert answered > 50, answered


def test_no_witness_or_no_entry_leaves_the_listing_to_value_files(tmp_path: Path) -> None:
    """No entry computed again, or no witness noted for the test: not known."""
    path = tmp_path / "a.py"
    texts = {path: b"x.log_stats = report\n"}
    reads = Reads()
    assert still_first_store(NAME, TEST, [path], Recording(texts, reads)) is None
    reads.absent = Absent({TEST: None}, {})
    assert still_first_store(NAME, TEST, [path], Recording(texts, reads)) is None
    reads.absent = Absent({TEST: str(path)}, {})
    assert still_first_store(NAME, TEST, [path], Recording(texts, reads)) == path


STORES = "class Holder:\n    def __init__(self, report):\n        self.log_stats = report\n"
CALLS = "def show(engine, loss):\n    engine.log_stats(loss)\n"


@pytest.fixture(autouse=True)
def reach_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """reach's index alone decides which calls are asked: event_capable.AnyEvent, here opened,
    would leave these programs' calls unasked (no helper in them can make an event)."""
    monkeypatch.setattr(event_capable.AnyEvent, "build", every_helper)


@pytest.fixture
def project(cached_root: Path) -> Path:
    """test_reach's chain across files (`engine.log_stats(loss)` asks whether some file gives
    `log_stats` a value), with files that store it, call it and write it; the cache on."""
    root = cached_root
    write(root, "ops.py", OPS)
    write(root, "engine.py", ENGINE)
    write(root, "train.py", TRAIN)
    write(root, "a_calls.py", CALLS)
    write(root, "b_stores.py", STORES)
    write(root, "c_calls.py", CALLS)
    write(root, "d_stores.py", STORES)
    write(root, "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.0"]\n')
    return root


def test_warm_runs_after_edits_around_the_witness_give_the_cold_bytes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits after the witness, before it (a store added, then removed), of the witness (its
    store removed, put back), and of the file read (train.py): each warm run prints a cold
    run's bytes, and the earlier witness is taken again."""
    answers: list[Path | None] = []

    def spied(*arguments):  # type: ignore[no-untyped-def]
        found = still_first_store(*arguments)
        answers.append(found)
        return found

    monkeypatch.setattr(reach, "still_first_store", spied)
    same_as_cold(project)
    edits = [
        ("c_calls.py", CALLS + "\nx = 1\n"),
        ("train.py", TRAIN + "\n_edited = 1\n"),
        ("a_calls.py", STORES),
        ("train.py", TRAIN + "\n_edited = 2\n"),
        ("a_calls.py", CALLS),
        ("train.py", TRAIN + "\n_edited = 3\n"),
        ("b_stores.py", CALLS),
        ("train.py", TRAIN + "\n_edited = 4\n"),
        ("b_stores.py", STORES),
        ("train.py", TRAIN),
    ]
    for name, text in edits:
        write(project, name, text)
        same_as_cold(project)
    assert any(found is not None for found in answers), answers


STATEMENTS = """\
self.name = f
a.b.name = f
name = f
a, b.name = f
[a.name, *b.name] = f
x[0].name = f
x[[c.name for c.name in y]] = f
for self.name in f: pass
with f() as (a, self.name): pass
del self.name, a.b.name
self.name += f
self.name: T = f
"""


def test_the_attributes_a_statement_stores_are_those_a_whole_walk_finds() -> None:
    """`attribute_targets` skips the walk below a plain name and below `name.attr`: the same
    attribute names as a walk of every target's nodes (a comprehension's target included)."""
    for statement in ast.parse(STATEMENTS).body:
        targets = [
            getattr(statement, "target", None),
            *getattr(statement, "targets", ()),
            *(i.optional_vars for i in getattr(statement, "items", ())),
        ]
        walked = [
            node.attr
            for target in targets
            if target is not None
            for node in ast.walk(target)
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load)
        ]
        assert list(attribute_targets(statement)) == walked, ast.unparse(statement)


def test_an_exists_witness_taken_from_an_entry_is_today_s_first(tmp_path: Path) -> None:
    """Random texts, the first that passes noted, random edits: `Absent.first_passing` gives
    today's first passing file wherever the witness did not change (None where it did), and
    `exists` over the evaluator's texts answers and notes as a scan of every file does."""
    generator = random.Random(37)
    lines = [b"fused = True", b"x = 1", b"loss.backward()", b"def f(): pass"]
    tests = [(holds(b"fused"),), (holds(b"backward"),), (holds(b"fused"), holds(b"x"))]
    taken = 0
    for _ in range(300):
        paths = [tmp_path / f"m{i}.py" for i in range(7)]
        then = {p: b"\n".join(generator.sample(lines, 2)) for p in paths}
        today = dict(then)
        for path in generator.sample(paths, generator.randrange(0, 3)):
            today[path] = b"\n".join(generator.sample(lines, 2))
        changed = {p: today[p] for p in paths if today[p] != then[p]}
        first = {
            test: next((str(p) for p, d in then.items() if passes(test, d, p)), None)
            for test in tests
        }
        for test in tests:
            today_first = next((p for p, d in today.items() if passes(test, d, p)), None)
            found = Absent({}, changed, witnesses=first).first_passing(test, today)
            if first[test] is not None and Path(first[test]) not in changed:
                taken += 1
                assert found == today_first
            else:
                assert found is None
            reads = Reads()
            reads.absent = Absent({}, changed, witnesses=first)
            evaluator = Recording(today, reads)
            evaluator.scanned = True
            assert exists(evaluator, *test) == (today_first is not None)
            noted = reads.exists[test]
            assert noted == (None if today_first is None else str(today_first))
    assert taken > 100, taken


READS = "def peek(engine):\n    return engine.log_stats\n"  # the name other than `.log_stats(`


def test_the_over_budget_answer_notes_each_file_s_free_writing_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its budget (FILES_READ, made 1 here) the value question answers "may" from how
    many files write the name other than as `.log_stats(`: that count is noted as each naming
    file's free-writing test with its result, so an edit that changes only that asks again
    (a query entry whose noted tests give other results is not reused); warm runs around
    such an edit give a cold run's bytes."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(reach, "FILES_READ", 1)
    root = tmp_path / "project"
    for name, text in [("ops.py", OPS), ("engine.py", ENGINE), ("train.py", TRAIN)]:
        write(root, name, text)
    write(root, "a_reads.py", READS)
    write(root, "b_reads.py", READS)
    write(root, "c_calls.py", CALLS)
    write(root, "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.0"]\n')
    noted: dict[str, bool] = {}
    tested = reach.tested

    def spied(contents, path, test, result):  # type: ignore[no-untyped-def]
        if test == (("fn", "written_free", "log_stats"),):
            noted[path.name] = result
            assert passes(test, path.read_bytes(), path) == result
        return tested(contents, path, test, result)

    monkeypatch.setattr(reach, "tested", spied)
    same_as_cold(root)
    free = {"a_reads.py": True, "b_reads.py": True, "engine.py": True}  # `def log_stats`
    assert noted == {**free, "c_calls.py": False, "train.py": False}
    write(root, "b_reads.py", CALLS)  # still names log_stats, no longer freely
    same_as_cold(root)


def test_a_stored_free_writing_test_is_checked_without_the_reach_module() -> None:
    """`query_checks.still` checks an entry's noted tests after importing text_tests only: the
    free-writing predicate is there (a missing one would make every such entry a miss)."""
    code = (
        "import sys\n"
        "import amp_clipfix.analysis.text_tests\n"
        "from amp_clipfix.analysis.recording import passes\n"
        "test = (('fn', 'written_free', 'log_stats'),)\n"
        "assert passes(test, b'x = engine.log_stats\\n')\n"
        "assert not passes(test, b'engine.log_stats(loss)\\n')\n"
        "assert 'amp_clipfix.analysis.reach' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
