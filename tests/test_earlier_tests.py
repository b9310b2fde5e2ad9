"""A query computed again takes from its earlier entry what the unchanged files' bytes decide
(branch `hook`, session 23): the caller search's whole-word listing of a name from the entry's
scan of it (callers.CallerIndex.files_naming_all, recording.earlier_scan), the scans by the
files' positions (`Absent.scanned`, `Absent.first_passing`), and the value question's free
writing of a name past its budget from the entry's noted tests (reach.CallReach.value_files,
recording.earlier_result). Only the changed files are tested; the answers are a cold run's,
and so are the bytes from the command line."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import same_as_cold, write
from test_reach import ENGINE, OPS, TRAIN
from test_reach_witness import (
    CALLS,
    READS,
    STORES,
    reach_alone,  # noqa: F401 - autouse here too
)

from amp_clipfix.analysis import callers, reach, recording
from amp_clipfix.analysis.recording import Absent, Reads, Recording, holds, passes

LINES = [b"fused = True", b"x = 1", b"loss.backward()", b"def f(): pass", b"log_stats(x)"]
TESTS = [(holds(b"fused"),), (holds(b"backward"),), (holds(b"x"), holds(b"f"))]


def listed_scan(
    test: recording.Test, texts: dict[Path, bytes], found: frozenset[str], changed: set[str]
) -> list[Path]:
    """`Absent.scanned` as it was written before: every file of `texts` looked at in order."""
    return [
        path
        for path, data in texts.items()
        if (passes(test, data, path) if str(path) in changed else str(path) in found)
    ]


def listed_first(
    test: recording.Test, texts: dict[Path, bytes], witness: str | None, changed: set[str]
) -> Path | None:
    """`Absent.first_passing` as it was written before."""
    if witness is None or witness in changed:
        return None
    for path, data in texts.items():
        if str(path) == witness:
            return path
        if str(path) in changed and passes(test, data, path):
            return path
    return None


def test_scans_by_position_are_the_listings_of_every_file(tmp_path: Path) -> None:
    """Random texts, random edits, entries noted on another list of files (some found or
    changed files no longer among the texts, some new ones): `scanned` and `first_passing`
    answer as looking at every file in order did."""
    generator = random.Random(23)
    for _ in range(400):
        paths = [tmp_path / f"m{i}.py" for i in range(8)]
        then = {p: b"\n".join(generator.sample(LINES, 2)) for p in paths}
        today = {p: then[p] for p in generator.sample(paths, 6)}  # in another order, two gone
        for path in generator.sample(list(today), generator.randrange(0, 4)):
            today[path] = b"\n".join(generator.sample(LINES, 2))
        today[tmp_path / "new.py"] = b"\n".join(generator.sample(LINES, 2))
        every = [*paths, tmp_path / "new.py"]
        changed = {p: today.get(p) for p in every if today.get(p) != then.get(p)}
        names = set(map(str, changed))
        scans = {
            test: frozenset(str(p) for p, d in then.items() if passes(test, d, p)) for test in TESTS
        }
        first = {test: next((str(p) for p in scans[test]), None) for test in TESTS}
        earlier = Absent({}, changed, scans, witnesses=first)
        for test in TESTS:
            assert earlier.scanned(test, today) == listed_scan(test, today, scans[test], names)
            expected = listed_first(test, today, first[test], names)
            assert earlier.first_passing(test, today) == expected


def test_an_earlier_result_is_known_only_for_an_unchanged_file(tmp_path: Path) -> None:
    """The entry's noted result of a test of one file's text, for that file unchanged only;
    nothing while no query is computed again."""
    same, edited = tmp_path / "a.py", tmp_path / "b.py"
    test = (("fn", "written_free", "log_stats"),)
    noted = {str(same): {test: True}, str(edited): {test: False}}
    reads = Reads()
    contents = Recording({same: b"", edited: b""}, reads)
    assert recording.earlier_result(contents, same, test) is None
    reads.absent = Absent({}, {edited: b"log_stats = 1"}, tests=noted)
    assert recording.earlier_result(contents, same, test) is True
    assert recording.earlier_result(contents, edited, test) is None
    assert recording.earlier_result(contents, same, (holds(b"x"),)) is None


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """test_reach's chain across files (`engine.log_stats(loss)` asks whether some file gives
    `log_stats` a value), with files that read, call and store it; the value question's
    budget made 1 file, so that its answer is "may" from the free writings; the cache on."""
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
    return root


def spy_tests(monkeypatch: pytest.MonkeyPatch, module: object, *names: str) -> list[str]:
    """The files (their names) the module's text tests `names` are asked of."""
    asked: list[str] = []

    def spied(function):  # type: ignore[no-untyped-def]
        def test(name: str, data: bytes) -> bool:
            asked.append(name)
            return function(name, data)

        return test

    for name in names:
        monkeypatch.setattr(module, name, spied(getattr(module, name)))
    return asked


def test_the_free_writings_past_the_budget_are_taken_from_the_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit of the file the search reads (train.py), the value question of
    `log_stats` computed again tests no unchanged file's free writing or store (the entry
    noted each file's free writing, after a listing that met no store). Edits that make a
    file store the name, write it freely, then no longer: each warm run gives a cold run's
    bytes."""
    same_as_cold(project)
    texts = {path: path.read_bytes() for path in project.glob("*.py")}
    asked: list[bytes] = []  # the texts tested for `log_stats`
    for name in ("written_free", "stored_text"):
        function = getattr(reach, name)

        def spied(word: str, data: bytes, function=function) -> bool:  # type: ignore[no-untyped-def]
            if word == "log_stats":
                asked.append(data)
            return function(word, data)

        monkeypatch.setattr(reach, name, spied)
    write(project, "train.py", TRAIN + "\n_edited = 1\n")
    warm = amp_clipfix(project, "check", entry=False)
    unchanged = {data for path, data in texts.items() if path.name != "train.py"}
    assert asked
    assert not unchanged.intersection(asked)
    assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
    edits = [
        ("train.py", TRAIN + "\n_edited = 2\n"),
        ("b_reads.py", STORES),  # now it stores the name: a witness by its text
        ("train.py", TRAIN + "\n_edited = 3\n"),
        ("b_reads.py", READS),
        ("train.py", TRAIN + "\n_edited = 4\n"),
        ("a_reads.py", CALLS),  # no longer written freely
        ("train.py", TRAIN),
    ]
    for name, text in edits:
        write(project, name, text)
        same_as_cold(project)


def test_the_caller_search_takes_a_name_s_files_from_the_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit, the caller search computed again lists the files naming a name from
    the entry's scan (recording.earlier_scan), today's listing of every file; warm runs
    around edits that add and remove the name give a cold run's bytes."""
    same_as_cold(project)
    taken: list[tuple[recording.Test, list[Path]]] = []
    earlier_scan = recording.earlier_scan

    def spied(contents, test):  # type: ignore[no-untyped-def]
        found = earlier_scan(contents, test)
        if found is not None:
            taken.append((test, found))
            texts = recording.raw(contents)
            assert found == [p for p, d in texts.items() if passes(test, d, p)]
        return found

    monkeypatch.setattr(callers, "earlier_scan", spied)
    edits = [
        ("train.py", TRAIN + "\n_edited = 1\n"),
        ("c_calls.py", CALLS + "\nlog_stats = None\n"),
        ("train.py", TRAIN + "\n_edited = 2\n"),
        ("c_calls.py", CALLS),
        ("train.py", TRAIN),
    ]
    for name, text in edits:
        write(project, name, text)
        same_as_cold(project)
    assert taken


def stored_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[object, ...]]:
    """What each query entry a run stores read (its files, scans, witnesses, text tests)."""
    from amp_clipfix.analysis import queries

    stored: dict[str, tuple[object, ...]] = {}
    store = queries.Queries.store

    def spied(self, key, value, touched, reads=None, **rest):  # type: ignore[no-untyped-def]
        noted = self.reads if reads is None else reads
        stored[key] = (
            sorted(noted.files),
            dict(noted.scans),
            dict(noted.exists),
            {path: dict(tests) for path, tests in noted.tests.items()},
        )
        return store(self, key, value, touched, reads, **rest)  # `left`: certificate.py

    monkeypatch.setattr(queries.Queries, "store", spied)
    return stored


def test_an_entry_computed_again_notes_what_a_cold_run_notes(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries a warm run computes again after an edit note the reads a run with an empty
    cache notes on the same files: what is taken from the earlier entry is noted as the
    scan or test it stands for."""
    same_as_cold(project)
    write(project, "train.py", TRAIN + "\n_edited = 1\n")
    warm = stored_reads(monkeypatch)
    amp_clipfix(project, "check", entry=False)
    assert warm
    for folder in project.glob(".amp_clipfix_cache"):
        __import__("shutil").rmtree(folder)
    cold = stored_reads(monkeypatch)
    amp_clipfix(project, "check", entry=False)
    for key, reads in warm.items():
        assert reads == cold[key], key
