"""After an edit to a file only a rule's search reads, the queries reused before it that
moved the evaluator are computed again first (queries.Queries.catch_up), so the rule runs on
the evaluator a cold run has; edits inside the region the search reads (the caller's argument
it follows) that change the finding and that do not give a cold `--no-cache` run's bytes, with
the full budget and with one that cuts answers."""

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
from test_text_tests import LOOP, SCALING

from amp_clipfix.analysis import certificate, frame, queries

asked = pytest.fixture(name="asked")(spied_queries)


@pytest.fixture(autouse=True)
def always_caught_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """These edits test the catch-up itself (the certificate's fallback: where it is skipped,
    tests/test_catch_up_certificate.py): a run never skips it here."""
    made = certificate.Watch.__init__

    def never_certain(self: certificate.Watch, collection: object, make: object, _: bool) -> None:
        made(self, collection, make, False)  # type: ignore[arg-type]

    monkeypatch.setattr(certificate.Watch, "__init__", never_certain)


# loop.py: the clip between the scaled backward and the step, `scaler` from the callers;
# caller.py calls it with a GradScaler (the finding in loop.py) and is parsed by ACF004 alone.
CALLER = SCALING


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
