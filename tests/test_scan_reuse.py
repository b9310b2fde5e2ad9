"""A query computed again (or caught up) takes each text scan from its entry's scan of the same
test (recording.Absent.scanned, branch `edit6`): the files found then that did not change, and
the changed files tested again. The same files, in the same order, as a scan of today's texts;
from the command line, a cold run's bytes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_incremental import (  # noqa: F401 - a fixture
    EDITS,
    HELPER,
    MODULE,
    project,
    same_as_cold,
    write,
)

from amp_clipfix.analysis import recording
from amp_clipfix.analysis.recording import Absent, Reads, Recording, holds, matches, passes, scan
from amp_clipfix.analysis.written_events import BACKWARD_WITH_ARGUMENTS

LINES = [
    b"fused = True",
    b"opt = AdamW(p, fused=True)",
    b"loss.backward(retain_graph=True)",
    b"loss.backward()",
    b"clip_grad_norm_(p, 1.0)",
    b"x = 1",
    b"def f(): pass",
    b"\xef\xac\x81used = 1",  # not `fused` in bytes: an NFKC spelling the test sees as it is
]
TESTS = [
    (holds(b"fused"),),
    (holds(b"fused"), matches(__import__("re").compile(rb"fused\s*="))),
    (("any", (b"clip_grad_norm_", b"backward")),),
    (("fn", BACKWARD_WITH_ARGUMENTS),),
]


def full_scan(texts: dict[Path, bytes], test: recording.Test) -> list[Path]:
    return [path for path, data in texts.items() if passes(test, data, path)]


def test_a_scan_taken_from_an_entry_is_today_s_scan(tmp_path: Path) -> None:
    """Random texts, random edits of a few of them: the answer taken from the earlier scan is
    the scan of today's texts, file for file and in order, for every kind of test."""
    generator = random.Random(35)
    for _ in range(300):
        paths = [tmp_path / f"m{i}.py" for i in range(8)]
        then = {p: b"\n".join(generator.sample(LINES, 2)) for p in paths}
        today = dict(then)
        for path in generator.sample(paths, generator.randrange(0, 4)):
            today[path] = b"\n".join(generator.sample(LINES, 3))
        changed = {p: today[p] for p in paths if today[p] != then[p]}
        scans = {test: frozenset(map(str, full_scan(then, test))) for test in TESTS}
        earlier = Absent({}, changed, scans)
        for test in TESTS:
            assert earlier.scanned(test, today) == full_scan(today, test)
        assert earlier.scanned((holds(b"other"),), today) is None  # no such scan: none taken


def test_only_the_evaluator_s_texts_take_a_scan(tmp_path: Path) -> None:
    """`scan` takes an entry's answer only over the texts every scan is made over (the
    evaluator's), and only while a query is computed again."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    texts = {a: b"fused = 1", b: b"fused = 2"}
    reads = Reads()
    reads.absent = Absent({}, {}, {(holds(b"fused"),): frozenset({str(a)})})
    other = Recording(texts, reads)
    assert scan(other, holds(b"fused")) == [a, b]  # not the evaluator's: every file tested
    evaluator = Recording(texts, reads)
    evaluator.scanned = True
    assert scan(evaluator, holds(b"fused")) == [a]  # the entry's answer: b did not change
    reads.absent = None
    assert scan(evaluator, holds(b"fused")) == [a, b]


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many scans were taken from an entry and made, and that every noted scan is over the
    evaluator's texts (what `Absent.scanned` relies on)."""
    counts = {"taken": 0, "made": 0}
    scanned, noted = Absent.scanned, recording.noted

    def spied_scanned(self: Absent, *arguments: object) -> object:
        found = scanned(self, *arguments)  # type: ignore[arg-type]
        counts["taken" if found is not None else "made"] += 1
        return found

    def spied_noted(contents: object, *arguments: object) -> object:
        assert not isinstance(contents, Recording) or contents.scanned
        return noted(contents, *arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(Absent, "scanned", spied_scanned)
    monkeypatch.setattr(recording, "noted", spied_noted)
    return counts


def test_warm_runs_after_edits_give_the_cold_bytes(
    project: Path,  # noqa: F811 - the fixture
    scans: dict[str, int],
) -> None:
    """Edits that make a file that was no caller of the factory one (passing `fused=True`) and
    back, a backward with arguments written and removed, then every edit of the incremental
    tests (callers' arguments, a file that starts to say `fused`, files added, removed and
    renamed): each warm run prints a cold run's bytes, and scans are taken from the entries."""
    seen = {same_as_cold(project)}
    caller = MODULE.format(fused="True").replace("class Module", "class Other")
    for text in [caller, HELPER.format(i=0), caller, HELPER.format(i=0)]:
        write(project, "pkg/helper_0.py", text)
        seen.add(same_as_cold(project))
    assert len(seen) == 2, seen  # the changed file's scans decided the report
    write(project, "pkg/helper_1.py", "def helper_1(x, loss):\n    loss.backward(x)\n")
    same_as_cold(project)
    write(project, "pkg/helper_1.py", HELPER.format(i=1))
    same_as_cold(project)
    for edit in EDITS.values():
        edit(project)
        same_as_cold(project)
    assert scans["taken"] > 0, scans
