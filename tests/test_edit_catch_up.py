"""After an edit, the queries reused before the first computed one are computed again (to
bring the evaluator to where a cold run has it) only when they evaluated something: a query
that made the evaluator, or filled its text caches (relevance, text searches), and evaluated
nothing is skipped (queries.evaluation). Every warm run prints a cold `--no-cache` run's
bytes, with the full budget and with one that cuts answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_incremental import (
    base_project,
    computed,
    edit_line,
    reused,
    same_as_cold,
    spied_queries,
    write,
)

from amp_clipfix.analysis import frame, queries

asked = pytest.fixture(name="asked")(spied_queries)

# The clip between the scaled backward and the step; `scaler` comes from the callers.
LOOP = """import torch


def step(model, optimizer, loss, scaler):
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""
# Calls it with a GradScaler: the finding in loop.py. ACF004 parses this file.
CALLER = """import torch
from loop import step


def train(model, optimizer, loss):
    step(model, optimizer, loss, torch.amp.GradScaler("cuda"))
"""


@pytest.fixture
def caught_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many reused computations each catch-up ran again, run after run."""
    counts: list[int] = []
    catch_up = queries.Queries.catch_up

    def spied(self: queries.Queries) -> None:
        counts.append(len(self.behind))
        catch_up(self)

    monkeypatch.setattr(queries.Queries, "catch_up", spied)
    yield counts


# A fused optimizer built as written in a plain function: the trial and the resolution read
# it without evaluating anything (no value followed, no class's bases).
MODULE = """import torch


def make(params):
    return torch.optim.AdamW(params, lr=1e-3, fused=True)
"""


@pytest.fixture
def plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An optimizer the trial and the resolution read as written, a Trainer, and a scaled clip
    the callers decide."""
    root = base_project(tmp_path, monkeypatch, "False")
    (root / "scaled.py").unlink()
    (root / "pkg/factory.py").unlink()
    write(root, "pkg/module.py", MODULE)
    write(root, "loop.py", LOOP)
    write(root, "caller.py", CALLER)
    return root


def test_an_edit_to_a_file_only_a_rule_reads_catches_up_nothing_that_evaluated_nothing(
    plain: Path, asked: list[tuple[str, bool]], caught_up: list[int]
) -> None:
    """caller.py is parsed by ACF004's search alone. A line added at its end (no line moves,
    no site changes) reuses every query before ACF004; those that evaluated nothing are not
    computed again before ACF004 is, and the bytes are a cold run's."""
    first = same_as_cold(plain)
    assert b"loop.py:6:5: ACF004 " in first
    asked.clear()
    caught_up.clear()
    edit_line("caller.py", '"cuda"))\n', '"cuda"))\n\n\nEDITED = 1\n')(plain)
    assert same_as_cold(plain) == first
    assert "rule ACF004" in computed(asked)
    before = computed(asked)[0]
    assert before == "rule ACF004" and "resolve" in reused(asked), asked
    assert caught_up and sum(caught_up) == 0, caught_up


def test_a_reused_query_that_evaluated_is_still_caught_up(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    asked: list[tuple[str, bool]],
    caught_up: list[int],
) -> None:
    """The factory's `fused` comes from its caller: the resolution evaluates (follows the
    parameter to module.py). An edit to the scaled clip's file, which only ACF004 reads,
    reuses the resolution and computes it again before ACF004 (a cold run's ACF004 runs on
    the evaluator the resolution left)."""
    root = base_project(tmp_path, monkeypatch, "True")
    first = same_as_cold(root)
    assert b"ACF002" in first
    asked.clear()
    caught_up.clear()
    edit_line("scaled.py", "    scaler.update()\n", "    scaler.update()\n\n\nEDITED = 1\n")(root)
    assert same_as_cold(root) == first
    assert "resolve" in reused(asked) and "rule ACF004" in computed(asked), asked
    assert sum(caught_up) >= 1, caught_up


@pytest.mark.parametrize("budget", [12, 30])
def test_edits_under_a_budget_that_cuts_answers_give_the_cold_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """With a run's budget small enough that answers are cut, what the evaluator spent before
    a query decides its answer: each warm run after an edit inside the region ACF004 reads
    (the caller's argument), after one that leaves every answer as it was, and after one that
    adds the finding back, prints the cold run's bytes."""
    monkeypatch.setattr(frame, "BUDGET", budget)
    root = base_project(tmp_path, monkeypatch, "True")
    write(root, "loop.py", LOOP)
    write(root, "caller.py", CALLER)
    reports = {same_as_cold(root, "--format", "json")}
    for edit in (
        edit_line("caller.py", 'torch.amp.GradScaler("cuda")', "None"),
        edit_line("caller.py", "None)\n", "None)\n\n\nEDITED = 1\n"),
        edit_line("caller.py", "None)", 'torch.amp.GradScaler("cuda"))'),
        edit_line("pkg/module.py", "fused=True", "fused=False"),
    ):
        edit(root)
        reports.add(same_as_cold(root, "--format", "json"))
    assert len(reports) >= 2
