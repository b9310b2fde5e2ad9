"""ACF011's candidates each computed on an evaluator of their own (candidate_answers.py): a
candidate is reused after an edit when its own reads hold, wherever it stands in the list, and
the warm output is always a cold `--no-cache` run's bytes (`same_as_cold`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_candidate_answers import PYPROJECT, answered, cold_then, edit, reused
from test_incremental import same_as_cold, write

from amp_clipfix.analysis import frame

__all__ = ["answered", "reused"]  # the fixtures, shared

# Two candidates spread the same dict, whose `precision` is a third module's constant: the
# first one's computation reads base.py, and on a shared evaluator the second one met the
# dict's value as a memo that first one made, without reading base.py itself.
BASE = 'VALUE = "16"\n'
HELPERS = """from base import VALUE

CONFIG = {"precision": VALUE, "max_epochs": 1}
"""
SPREADS = """import lightning as L

from helpers import CONFIG

# the old spelling "16" is one of base.py's
trainer = L.Trainer(**CONFIG)
"""
OWN = """import lightning as L

trainer = L.Trainer(precision="bf16")
"""


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_spreads.py", SPREADS)
    write(root, "b_own.py", OWN)
    write(root, "c_spreads.py", SPREADS.replace("trainer =", "other ="))
    write(root, "helpers.py", HELPERS)
    write(root, "base.py", BASE)
    write(root, "pyproject.toml", PYPROJECT)
    return root


EVERY = ["a_spreads.py", "b_own.py", "c_spreads.py"]


def test_a_module_two_candidates_reach_through_a_third_edited(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    """base.py edited: both spreading candidates read it on their own, so both are computed
    (sharing the first one's memo, the second one was reused and kept the finding)."""
    first = cold_then(project, answered, reused, EVERY)
    assert b"helpers.py:3" in first
    edit(project, "base.py", '"16"', '"32-true"')
    warm = same_as_cold(project)
    assert b"helpers.py:3" not in warm and b"b_own.py:3" in warm
    assert reused == ["b_own.py"]
    assert answered == ["a_spreads.py", "c_spreads.py", *EVERY]


@pytest.mark.parametrize(
    ("name", "old", "new", "computed"),
    [
        ("a_spreads.py", "trainer =", "first =", "a_spreads.py"),  # before the others
        ("b_own.py", '"bf16"', '"16"', "b_own.py"),  # between them
        ("c_spreads.py", "other =", "last =", "c_spreads.py"),  # after them
    ],
)
def test_an_edited_candidate_is_computed_alone(
    project: Path,
    answered: list[str],
    reused: list[str],
    name: str,
    old: str,
    new: str,
    computed: str,
) -> None:
    cold_then(project, answered, reused, EVERY)
    edit(project, name, old, new)
    same_as_cold(project)
    assert reused == [other for other in EVERY if other != computed]
    assert answered == [computed, *EVERY]


def test_a_candidate_edited_out_of_the_list_reuses_the_others(
    project: Path, answered: list[str], reused: list[str]
) -> None:
    """b_own.py no longer names a Trainer (no candidate): the others are reused."""
    cold_then(project, answered, reused, EVERY)
    write(project, "b_own.py", 'PRECISION = "bf16"\n')
    warm = same_as_cold(project)
    assert b"b_own.py" not in warm and b"helpers.py:3" in warm
    assert reused == ["a_spreads.py", "c_spreads.py"]
    assert answered == ["a_spreads.py", "c_spreads.py"]


def test_candidates_the_budget_cuts_are_answered_as_a_cold_run_cuts_them(
    project: Path, answered: list[str], reused: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a budget too small for the spreads, each candidate is cut by its own budget alone:
    a reused one is cut as computing it again would cut it, whatever ran before it."""
    monkeypatch.setattr(frame, "BUDGET", 6)
    first = cold_then(project, answered, reused, EVERY)
    edit(project, "b_own.py", '"bf16"', '"16"')
    warm = same_as_cold(project)
    assert warm != first
    assert reused == ["a_spreads.py", "c_spreads.py"]
    assert answered == ["b_own.py", *EVERY]


# Two candidates each define a `build` whose spread's values come from its callers: the second
# one's caller search finds the files naming `build` in the answer the first one's made (the
# text scan is a function of the texts, shared), and must note that scan as its own read.
BUILD = """import lightning as L


def build(config):
    # the old spelling "16" may be passed as its precision
    return L.Trainer(**config)
"""
CALLER = """from z_build import build

build({"precision": "bf16"})
"""


def test_a_file_that_starts_calling_the_second_candidates_function(
    cached_root: Path, answered: list[str], reused: list[str]
) -> None:
    """y_caller.py starts calling z_build.build: z_build.py reads that only through the scan of
    the files naming `build` that a_build.py's search made first, noted as its own read too,
    so both are computed again (with the scan unnoted, z_build.py was reused, its finding lost)."""
    write(cached_root, "a_build.py", BUILD)
    write(cached_root, "z_build.py", BUILD)
    write(cached_root, "y_caller.py", "VALUE = 1\n")
    write(cached_root, "pyproject.toml", PYPROJECT)
    first = same_as_cold(cached_root)
    assert answered == ["a_build.py", "z_build.py"] * 2
    answered.clear()
    write(cached_root, "y_caller.py", CALLER)
    warm = same_as_cold(cached_root)
    assert b"y_caller.py:3" in warm and b"y_caller.py" not in first
    assert reused == []
    assert answered == ["a_build.py", "z_build.py"] * 2
