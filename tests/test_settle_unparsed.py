"""The settle notes each question as `questions.Unparsed`: a changed file that holds its words
and passes its test counts only when it may not parse (the settle reports such files; whether
each file a search read parses, its key holds already). So an edit to ACF011's candidate that
still parses reuses the settle. Every warm output is a cold `--no-cache` run's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from piped import amp_clipfix
from test_candidate_answers import PYPROJECT, edit
from test_detached_queries import AMP, FSDP, SETTINGS, SPREAD
from test_incremental import computed, reused, same_as_cold, spied_queries, write

from amp_clipfix.analysis import frame, recording
from amp_clipfix.analysis.calls import CallTest
from amp_clipfix.analysis.names import TRAINER_CLASSES
from amp_clipfix.analysis.questions import MAY_FAIL, Unparsed

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_spread.py", SPREAD)
    write(root, "settings.py", SETTINGS)
    write(root, "b_amp.py", AMP)
    write(root, "c_fsdp.py", FSDP)
    write(root, "pyproject.toml", PYPROJECT)
    return root


def cold(project: Path, asked: list[tuple[str, bool]]) -> bytes:
    first = same_as_cold(project)
    assert b"settings.py:2" in first and b"b_amp.py:3" in first and b"c_fsdp.py:3" in first
    asked.clear()
    return first


def test_an_edit_to_a_candidate_that_still_parses_reuses_the_settle(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """a_spread.py (ACF011's candidate, holding its question's words) edited: ACF011 is
    computed, leaves what it left, and the settle is reused with the rules after it."""
    cold(project, asked)
    edit(project, "a_spread.py", "trainer =", "# a comment\ntrainer =")
    warm = same_as_cold(project)
    assert b"settings.py:2" in warm
    assert "rule ACF011" in computed(asked)
    assert {"rule ACF012", "rule ACF013", "settle"} <= set(reused(asked)), asked


@pytest.mark.parametrize("name", ["a_spread.py", "c_fsdp.py"])
def test_a_word_file_edited_so_it_does_not_parse_is_reported(
    project: Path, asked: list[tuple[str, bool]], name: str
) -> None:
    cold(project, asked)
    path = project / name
    path.write_text(path.read_text(encoding="utf-8") + "x = (\n", encoding="utf-8")
    same_as_cold(project)
    reported = amp_clipfix(project, "check", entry=False)
    assert f"{name}:".encode() in reported.stderr and reported.code == 2
    assert "settle" in computed(asked), asked


def test_a_new_word_file_that_does_not_parse_is_reported(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    cold(project, asked)
    write(project, "d_new.py", 'import lightning as L\nL.Trainer(precision="16"\n')
    same_as_cold(project)
    reported = amp_clipfix(project, "check", entry=False)
    assert b"d_new.py:" in reported.stderr and reported.code == 2


@pytest.mark.parametrize("budget", [3, 6, 12, 25])
def test_budgets_after_an_edit_to_a_candidate_that_still_parses(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    monkeypatch.setattr(frame, "BUDGET", budget)
    same_as_cold(project)
    asked.clear()
    edit(project, "a_spread.py", "trainer =", "# a comment\ntrainer =")
    same_as_cold(project)
    assert "settle" in reused(asked), asked


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        (SPREAD, False),  # passes the test, parses
        (SPREAD + "x = (\n", True),  # passes the test, does not parse
        ("x = (\n", False),  # does not parse, but the test refuses it
    ],
)
def test_the_noted_question_counts_a_file_that_may_not_parse(
    tmp_path: Path, text: str, counts: bool
) -> None:
    where = CallTest(tmp_path, TRAINER_CLASSES)
    condition = Unparsed(where).condition
    assert condition == ("fn", MAY_FAIL, where.condition)
    counted = recording.predicate(MAY_FAIL)(tmp_path / "m.py", text.encode(), *condition[2:])
    assert counted is counts


def test_a_question_without_a_noted_test_counts_every_holder() -> None:
    assert Unparsed(lambda path, data: True).condition is None  # type: ignore[arg-type]
    assert Unparsed(None).condition == ("fn", MAY_FAIL, None)
