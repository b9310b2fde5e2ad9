"""The tree ACF013's syntax test parsed of a candidate it lets through is handed to the
search's read of the same text (LazyFiles.tested, parse_depth.handed_tree): each such file is
parsed once in a run, not once by the test and again by the search, and every output is a cold
`--no-cache` run's bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_candidate_answers import PYPROJECT, edit
from test_incremental import computed, same_as_cold, spied_queries, write

from amp_clipfix.analysis import frame, summary
from amp_clipfix.analysis.parse_depth import TEST_FRAMES, handed_tree, with_frames

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

FSDP = """import lightning as L

trainer = L.Trainer(strategy="fsdp", gradient_clip_val=1.0)
"""
# ACF013's test lets it through (a Trainer called with a `**` spread, through an alias); no
# other search nor the collection parses it first.
MODEL = """import lightning as L


def options(**kwargs):
    return dict(**kwargs)


class Model(L.LightningModule):
    def configure_gradient_clipping(self, *args, **kwargs):
        value = self.trainer.gradient_clip_val
        return super().configure_gradient_clipping(*args, **kwargs)


make = L.Trainer
make(**options())
"""
MARK = "def options("


@pytest.fixture
def project(cached_root: Path) -> Path:
    write(cached_root, "a_fsdp.py", FSDP)
    write(cached_root, "model.py", MODEL)
    write(cached_root, "pyproject.toml", PYPROJECT)
    return cached_root


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts of model.py a summary parsed (the search's read and the test's own parse)."""
    texts: list[str] = []
    real = summary.parse_module

    def counted(text: str, *rest: int) -> object:
        if MARK in text:
            texts.append(text)
        return real(text, *rest)

    monkeypatch.setattr(summary, "parse_module", counted)
    yield texts


def test_a_cold_run_parses_a_tested_candidate_once(project: Path, parses: list[str]) -> None:
    cold = same_as_cold(project)
    assert b"a_fsdp.py:3" in cold
    assert len(parses) == 2  # once in each run (the warm run here is its first: cold too)


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("a_fsdp.py", "gradient_clip_val=1.0", "gradient_clip_val=2.0"),  # a file ACF013 reads
        ("model.py", "make(**options())", "make(**options(strategy='fsdp'))"),  # the candidate
    ],
)
def test_a_warm_run_that_computes_acf013_parses_it_once(
    project: Path,
    asked: list[tuple[str, bool]],
    parses: list[str],
    name: str,
    old: str,
    new: str,
) -> None:
    same_as_cold(project)
    asked.clear()
    parses.clear()
    edit(project, name, old, new)
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm
    assert "rule ACF013" in computed(asked), asked
    assert len(parses) == 2, len(parses)  # the warm run's one parse and the cold run's one


@pytest.mark.parametrize("budget", [3, 6, 25])
def test_the_budget_cuts_after_an_edit_give_a_cold_runs_bytes(
    project: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    monkeypatch.setattr(frame, "BUDGET", budget)
    same_as_cold(project)
    edit(project, "model.py", "make(**options())", "make(**options(strategy='fsdp'))")
    same_as_cold(project)


def test_an_edit_so_the_candidate_does_not_parse(project: Path) -> None:
    """A text that does not parse hands no tree on: the search reads it and reports it."""
    same_as_cold(project)
    edit(project, "model.py", "make(**options())", "make(**options(")
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm


def test_a_tree_is_handed_only_for_the_same_text_with_as_many_frames() -> None:
    tree = summary.parse_module(MODEL)

    def handed(text: str, frames: int) -> object:
        return with_frames(frames, lambda: handed_tree(text, (MODEL, tree)))

    assert handed(MODEL, TEST_FRAMES + 10) is tree
    assert handed(MODEL + "\n", TEST_FRAMES + 10) is None  # another text: parse it
    assert handed(MODEL, TEST_FRAMES - 10) is None  # fewer frames than the test's: parse it
    assert handed_tree(MODEL, None) is None
