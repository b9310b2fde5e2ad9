"""ACF011's answer per candidate file, each computed on its own and kept with its own reads
(analysis/candidate_answers.py): after an edit every candidate whose own reads hold is answered
from the earlier entry, unparsed, wherever it stands, and the output is a cold run's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_catch_up_certificate import Events, events
from test_incremental import same_as_cold, write

from amp_clipfix.analysis import candidate_answers
from amp_clipfix.rules import acf011

__all__ = ["events"]  # the fixture, shared

FIRST = """import lightning as L

trainer = L.Trainer(precision=16)
"""
# its `**` spread is followed into settings.py (no candidate: it names no Trainer)
SPREAD = """import lightning as L

from settings import CONFIG

# the old spelling "16" is one of settings.py's
trainer = L.Trainer(**CONFIG)
"""
SETTINGS = """CONFIG = {"precision": "bf16", "max_epochs": 1}
"""
LAST = """import lightning as L

trainer = L.Trainer(precision="16", devices=1)
"""
PYPROJECT = """[project]
name = "demo"
version = "0"
dependencies = ["lightning>=2.0"]
"""


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_first.py", FIRST)
    write(root, "b_spread.py", SPREAD)
    write(root, "settings.py", SETTINGS)
    write(root, "c_last.py", LAST)
    write(root, "pyproject.toml", PYPROJECT)
    return root


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The candidate files ACF011 computed an answer for, run after run (by file name): each
    `same_as_cold` runs the warm command, then a `--no-cache` one (EVERY)."""
    names: list[str] = []
    findings = acf011.call_findings

    def spied(facts: object, file: acf011.FileFacts, fixable: bool) -> object:
        names.append(file.path.name)
        return findings(facts, file, fixable)  # type: ignore[arg-type]

    monkeypatch.setattr(acf011, "call_findings", spied)
    yield names


@pytest.fixture
def reused(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The candidate files answered from the earlier entry, run after run (by file name)."""
    names: list[str] = []
    put_back = candidate_answers.Session.put_back

    def spied(self: candidate_answers.Session, *arguments: object) -> None:
        part = arguments[-1]  # (facts, part); before session 32: (part)
        assert isinstance(part, candidate_answers.Part)
        names.append(Path(part.path).name)
        put_back(self, *arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(candidate_answers.Session, "put_back", spied)
    yield names


def edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


EVERY = ["a_first.py", "b_spread.py", "c_last.py"]  # a cold run computes each, in path order


def cold_then(
    project: Path, answered: list[str], reused: list[str], every: list[str] = EVERY
) -> bytes:
    """The first run (its cache empty), then the `--no-cache` one: each of `every` computed
    by both, none reused."""
    first = same_as_cold(project)
    assert answered == [*every, *every]
    assert reused == []
    answered.clear()
    return first


def test_the_last_candidate_edited_reuses_the_ones_before_it(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    first = cold_then(project, answered, reused)
    assert b"ACF011" in first and b"c_last.py:3" in first
    edit(project, "c_last.py", '"16", devices=1)', '"32", devices=1)\nOLD = "16"')
    warm = same_as_cold(project)
    assert b"c_last.py:3" not in warm and b"a_first.py:3" in warm
    assert reused == ["a_first.py", "b_spread.py"]
    assert answered == ["c_last.py", *EVERY]


def test_the_module_a_spread_is_followed_into_edited(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    first = cold_then(project, answered, reused)
    assert b"settings.py:1" in first
    edit(project, "settings.py", '"bf16"', '"32-true"')
    warm = same_as_cold(project)
    assert b"settings.py:1" not in warm and b"c_last.py:3" in warm
    assert reused == ["a_first.py", "c_last.py"]
    assert answered == ["b_spread.py", *EVERY]


def test_the_first_candidate_edited_reuses_the_ones_after_it(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    cold_then(project, answered, reused)
    edit(project, "a_first.py", "precision=16", 'precision="bf16"')
    warm = same_as_cold(project)
    assert b"a_first.py:3" in warm
    assert reused == ["b_spread.py", "c_last.py"]
    assert answered == ["a_first.py", *EVERY]


def test_a_file_that_joins_the_list_is_computed_alone(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    """A file that becomes a candidate between two others: it is computed, every other one
    reused, and the list is the cold run's."""
    write(project, "b_tools.py", "VALUE = 1\n")
    cold_then(project, answered, reused)
    edit(project, "b_tools.py", "VALUE = 1", "import lightning as L\n\nL.Trainer(precision=16)")
    warm = same_as_cold(project)
    assert b"b_tools.py:3" in warm
    assert reused == ["a_first.py", "b_spread.py", "c_last.py"]
    every = ["a_first.py", "b_spread.py", "b_tools.py", "c_last.py"]
    assert answered == ["b_tools.py", *every]


# `build` passes `config` on to itself: following the spread's value to its callers meets
# the evaluation of that very parameter again (a cycle: not a clean computation)
CYCLIC = """import lightning as L


def build(config, depth=2):
    if depth:
        return build(config, depth - 1)
    return L.Trainer(**config, devices=1)


build({"precision": "16"})
"""


def test_a_candidate_meeting_a_cycle_is_computed_on_its_own(
    project: Path, answered: list[str], reused: list[str], events: Events
) -> None:
    """The last candidate now meets a cycle while the ones before it were reused: its cycle is
    its own evaluator's, so the attempt stands (no second analysis with the catch-up); the
    output is a cold run's, and the next edit reuses it, cycle and all."""
    cold_then(project, answered, reused)
    events.clear()
    write(project, "c_last.py", CYCLIC)
    warm = same_as_cold(project)
    assert b"c_last.py" in warm
    assert reused == ["a_first.py", "b_spread.py"]
    assert events.attempts == [True, True]  # the warm run's and the cold run's, each once
    assert answered == ["c_last.py", *EVERY]
    reused.clear(), answered.clear()
    edit(project, "a_first.py", "precision=16", 'precision="bf16"')
    assert same_as_cold(project) != warm
    assert reused == ["b_spread.py", "c_last.py"]
    assert answered == ["a_first.py", *EVERY]


# an earlier search reads settings.py (the optimizer's `fused`) before ACF011's: the spread's
# part meets its summary again, loaded, and notes no read of it
OPTIMIZER = """import torch

from settings import FUSED

optimizer = torch.optim.AdamW([], fused=FUSED)
"""


def test_a_module_read_before_the_search_edited_computes_the_candidate_reading_it(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    """A module an earlier search loaded changed: the candidate whose spread is followed into
    it reads it on its own evaluator (noted), so it alone is computed (a5367223 reused all
    three and kept the spread's finding the edit removed)."""
    write(project, "settings.py", SETTINGS + "FUSED = True\n")
    write(project, "d_optimizer.py", OPTIMIZER)
    first = cold_then(project, answered, reused)
    assert b"settings.py:1" in first
    edit(project, "settings.py", '"bf16"', '"32-true"')
    warm = same_as_cold(project)
    assert b"settings.py:1" not in warm and b"c_last.py:3" in warm
    assert reused == ["a_first.py", "c_last.py"]
    assert answered == ["b_spread.py", *EVERY]
