"""A rule query that leaves the project's evaluator as it found it is detached (queries.py
`detach`): the later queries chain what it left (certificate.Watch.effects: the files it loaded,
the candidates it read, the summaries it made, its questions) into their keys instead of counting
what it read. ACF011 computes every candidate on an evaluator of its own, so an edit only ACF011
reads reuses ACF012, ACF013 and the settle; every warm output is a cold `--no-cache` run's bytes
(`same_as_cold`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_candidate_answers import PYPROJECT, edit
from test_incremental import computed, reused, same_as_cold, spied_queries, write

from amp_clipfix.analysis import frame

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

# ACF011 follows the spread into settings.py (a candidate: it holds an old spelling; refused by
# ACF011's text test: it names no Trainer); only ACF012 reads amp.py, only ACF013 fsdp.py.
SPREAD = """import lightning as L

from settings import CONFIG

# the old spelling "16" is one of settings.py's
trainer = L.Trainer(**CONFIG)
"""
SETTINGS = """# "16" was its old spelling
CONFIG = {"precision": "bf16", "max_epochs": 1}
"""
AMP = """import torch

scaler = torch.cuda.amp.GradScaler()
"""
FSDP = """import lightning as L

trainer = L.Trainer(strategy="fsdp", gradient_clip_val=1.0)
"""
LATER = ["rule ACF012", "rule ACF013"]


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
    """The first run, its cache empty, against a `--no-cache` one; the queries' log cleared."""
    first = same_as_cold(project)
    assert b"settings.py:2" in first and b"b_amp.py:3" in first and b"c_fsdp.py:3" in first
    asked.clear()
    return first


def test_an_edit_only_acf011_reads_reuses_the_rules_after_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """settings.py edited: ACF011's finding goes, what it left stays (settings.py read, it
    parses), so ACF012 and ACF013 are answered from the cache."""
    cold(project, asked)
    edit(project, "settings.py", '"bf16"', '"32-true"')
    warm = same_as_cold(project)
    assert b"settings.py" not in warm and b"b_amp.py:3" in warm and b"c_fsdp.py:3" in warm
    assert "rule ACF011" in computed(asked)
    assert set(LATER) <= set(reused(asked)), asked


def test_an_edit_that_changes_what_acf011_loads_computes_the_rules_after_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """settings.py holds no old spelling any more: no candidate, ACF011 loads it as another
    module instead of reading it as one, so what it left differs and the rules after it are
    computed again."""
    cold(project, asked)
    write(project, "settings.py", 'CONFIG = {"precision": "32-true"}\n')
    warm = same_as_cold(project)
    assert b"settings.py" not in warm and b"b_amp.py:3" in warm
    assert set(LATER) <= set(computed(asked)), asked


def test_an_edit_that_changes_which_module_acf011_reads_computes_the_rules_after_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """a_spread.py spreads another module's dict: ACF011 reads another file, so what it left
    differs and the rules after it are computed again."""
    write(project, "other.py", SETTINGS.replace('"bf16"', '"16"'))
    cold(project, asked)
    edit(project, "a_spread.py", "from settings", "from other")
    warm = same_as_cold(project)
    assert b"other.py:2" in warm and b"settings.py" not in warm
    assert set(LATER) <= set(computed(asked)), asked


def test_an_edit_acf012_reads_computes_it_and_the_rules_after_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """b_amp.py edited: ACF012 read it and moved the project's evaluator, so ACF013 counts
    ACF012's reads and is computed too; ACF011 before them is reused."""
    cold(project, asked)
    edit(project, "b_amp.py", "scaler =", "first = torch.cuda.amp.GradScaler()\nscaler =")
    warm = same_as_cold(project)
    assert b"b_amp.py:3" in warm and b"b_amp.py:4" in warm
    assert "rule ACF011" in reused(asked)
    assert set(LATER) <= set(computed(asked)), asked


def test_a_later_rule_computed_after_a_reused_acf011_counts_none_of_its_reads(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """settings.py no candidate (it holds no old spelling): ACF011 loads it. ACF012 computed
    after ACF011 was reused, what ACF011 left put back (settings.py promised, or loaded again,
    a read): ACF012's new entry does not count it, so an edit only ACF011 reads reuses it."""
    write(project, "settings.py", 'CONFIG = {"precision": "bf16-mixed", "max_epochs": 1}\n')
    same_as_cold(project)
    edit(project, "b_amp.py", "scaler =", "first = torch.cuda.amp.GradScaler()\nscaler =")
    same_as_cold(project)
    asked.clear()
    edit(project, "settings.py", '"max_epochs": 1', '"max_epochs": 2')
    warm = same_as_cold(project)
    assert b"b_amp.py:4" in warm
    assert "rule ACF011" in computed(asked)
    assert set(LATER) <= set(reused(asked)), asked


@pytest.mark.parametrize("budget", [3, 6, 12, 25])
def test_answers_the_budget_cuts_after_an_edit_only_acf011_reads(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """With a budget that cuts answers, the rules after ACF011 spend what the rules before it
    left (ACF011 spends none of it): reused after an edit only ACF011 reads, they are what a
    cold run cuts."""
    monkeypatch.setattr(frame, "BUDGET", budget)
    same_as_cold(project)
    asked.clear()
    edit(project, "settings.py", '"bf16"', '"32-true"')
    same_as_cold(project)
    assert set(LATER) <= set(reused(asked)), asked


def test_an_acf012_edit_that_leaves_acf013_less_budget(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF012 moves the project's evaluator: with 9 evaluations, a second call in b_amp.py
    leaves ACF013 too few to find the FSDP clip. Not detached, ACF012's reads count for
    ACF013, which is computed and cut as a cold run cuts it (detached, ACF013 was reused
    and kept the finding)."""
    monkeypatch.setattr(frame, "BUDGET", 9)
    first = same_as_cold(project)
    assert b"c_fsdp.py:3" in first
    asked.clear()
    edit(project, "b_amp.py", "scaler =", "first = torch.cuda.amp.GradScaler()\nscaler =")
    warm = same_as_cold(project)
    assert b"c_fsdp.py:3" not in warm
    assert set(LATER) <= set(computed(asked)), asked


@pytest.mark.parametrize("change", ["added", "removed"])
def test_a_candidate_added_or_removed_computes_every_rule(
    project: Path, asked: list[tuple[str, bool]], change: str
) -> None:
    """Another list of files: every query is computed, the output a cold run's."""
    extra = 'import lightning as L\n\ntrainer = L.Trainer(precision="16")\n'
    if change == "removed":
        write(project, "d_extra.py", extra)
    cold(project, asked)
    if change == "added":
        write(project, "d_extra.py", extra)
    else:
        (project / "d_extra.py").unlink()
    warm = same_as_cold(project)
    assert (b"d_extra.py:3" in warm) == (change == "added")
    assert {"rule ACF011", *LATER} <= set(computed(asked)), asked
