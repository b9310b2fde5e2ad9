"""A warm run skips the catch-up (queries.Queries.catch_up) where every reused query behind the
first computed one left a clean computation, putting back what they left instead
(analysis/certificate.py), and analyses the project again with the catch-up the moment a
computation on the evaluator that was not caught up is not clean: either way it prints a cold
`--no-cache` run's bytes."""

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

from amp_clipfix import pipeline
from amp_clipfix.analysis import certificate, queries
from amp_clipfix.records import field, record

asked = pytest.fixture(name="asked")(spied_queries)

# make_optimizer passes `fused` on to itself: following it to its callers meets the
# evaluation of that very parameter again (a cycle, cut where it is met)
CYCLIC_FACTORY = """import torch


def make_optimizer(params, fused, depth=2):
    if depth:
        return make_optimizer(params, fused, depth - 1)
    return torch.optim.AdamW(params, lr=1e-3, fused=fused)
"""
# the scaled clip reached through `train`, which passes the scaler on to itself
CYCLIC_SCALED = """import torch


def step(model, optimizer, loss, scaler):
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()


def train(model, optimizer, loss, scaler, depth=2):
    if depth:
        return train(model, optimizer, loss, scaler, depth - 1)
    step(model, optimizer, loss, scaler)


train(None, None, None, torch.amp.GradScaler("cuda"))
"""
SCALED_EDIT = edit_line(
    "scaled.py", "    scaler.update()\n", "    scaler.update()\n\n\nEDITED = 1\n"
)


@record
class Events:
    """What the runs did, run after run: each catch-up's computations (how many were behind),
    each put-back's, each attempt at a project (whether it might skip the catch-up), and
    each computation's `Left`."""

    caught_up: list[int] = field(default_factory=list)
    put_back: list[int] = field(default_factory=list)
    attempts: list[bool] = field(default_factory=list)
    lefts: list[certificate.Left] = field(default_factory=list)

    def clear(self) -> None:
        self.caught_up.clear()
        self.put_back.clear()
        self.attempts.clear()
        self.lefts.clear()


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[Events]:
    seen = Events()
    catch_up, put_back = queries.Queries.catch_up, certificate.Watch.put_back
    left, analysed = certificate.Watch.left, pipeline.analysed_project

    def spied_catch_up(self: queries.Queries) -> None:
        if self.behind:
            seen.caught_up.append(len(self.behind))
        catch_up(self)

    def spied_put_back(self: certificate.Watch, lefts: list[certificate.Left]) -> None:
        seen.put_back.append(len(lefts))
        put_back(self, lefts)

    def spied_left(self: certificate.Watch, before: tuple[object, ...]) -> certificate.Left:
        found = left(self, before)
        seen.lefts.append(found)
        return found

    def spied_analysed(*arguments: object, certify: bool) -> object:
        seen.attempts.append(certify)
        return analysed(*arguments, certify=certify)  # type: ignore[arg-type]

    monkeypatch.setattr(queries.Queries, "catch_up", spied_catch_up)
    monkeypatch.setattr(certificate.Watch, "put_back", spied_put_back)
    monkeypatch.setattr(certificate.Watch, "left", spied_left)
    monkeypatch.setattr(pipeline, "analysed_project", spied_analysed)
    yield seen


def test_a_clean_project_skips_the_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[tuple[str, bool]], events: Events
) -> None:
    """The resolution follows `fused` to the module (it moves the evaluator); an edit to the
    scaled clip's file, which only ACF004 reads, reuses it: its computation was clean, so it
    is not computed again (main computed it again before ACF004), and the output is the cold
    run's."""
    root = base_project(tmp_path, monkeypatch, "True")
    first = same_as_cold(root)
    assert b"ACF002" in first
    assert events.lefts and all(left.clean for left in events.lefts)
    asked.clear()
    events.clear()
    SCALED_EDIT(root)
    assert same_as_cold(root) == first
    assert "resolve" in reused(asked) and "rule ACF004" in computed(asked), asked
    assert events.caught_up == []
    assert sum(events.put_back) >= 1
    assert False not in events.attempts  # no second attempt


def test_edits_that_change_the_finding_or_not_give_the_cold_bytes_without_a_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: Events
) -> None:
    """Edits to the scaled clip's file, which only ACF004 reads: the gradients unscaled before
    the clip (its finding goes), a line moved, the unscale gone again (the finding is back).
    Each warm run prints the cold run's bytes, none catching up."""
    root = base_project(tmp_path, monkeypatch, "True")
    reports = [same_as_cold(root, "--format", "json")]
    events.clear()
    unscale = "    scaler.unscale_(optimizer)\n    torch.nn.utils.clip_grad_norm_"
    for edit in (
        edit_line("scaled.py", "    torch.nn.utils.clip_grad_norm_", unscale),
        SCALED_EDIT,
        edit_line("scaled.py", unscale, "    torch.nn.utils.clip_grad_norm_"),
    ):
        edit(root)
        reports.append(same_as_cold(root, "--format", "json"))
    assert reports[0] != reports[1] == reports[2] != reports[3]  # the finding went, came back
    assert events.caught_up == []
    assert sum(events.put_back) >= 3
    assert False not in events.attempts


def test_a_computation_that_meets_a_cycle_falls_back_to_the_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[tuple[str, bool]], events: Events
) -> None:
    """Every computation of the cold run was clean; the edit makes ACF004 follow the scaler
    through a function that passes it on to itself (a cycle). Computed on the evaluator that
    was not caught up, ACF004 is not clean: that attempt is thrown away, the project analysed
    again with the catch-up, and the output is the cold run's."""
    root = base_project(tmp_path, monkeypatch, "True")
    same_as_cold(root)
    assert all(left.clean for left in events.lefts)
    asked.clear()
    events.clear()
    write(root, "scaled.py", CYCLIC_SCALED)
    warm = same_as_cold(root)
    assert b"scaled.py" in warm
    assert events.attempts[:2] == [True, False]
    assert sum(events.put_back) >= 1 and sum(events.caught_up) >= 1
    assert "rule ACF004" in computed(asked), asked  # caught up (the attempt raised)


def test_a_cold_run_that_meets_a_cycle_is_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[tuple[str, bool]], events: Events
) -> None:
    """The factory passes `fused` on to itself: the resolution meets a cycle, so its
    computation is not clean, and a warm run after the scaled clip's edit computes it again
    before ACF004 (the catch-up), giving the cold run's bytes."""
    root = base_project(tmp_path, monkeypatch, "True")
    write(root, "pkg/factory.py", CYCLIC_FACTORY)
    first = same_as_cold(root)
    assert any(not left.clean for left in events.lefts)
    asked.clear()
    events.clear()
    SCALED_EDIT(root)
    assert same_as_cold(root) == first
    assert "rule ACF004" in computed(asked), asked
    assert sum(events.caught_up) >= 1
    assert events.put_back == []


def test_a_stored_text_test_asks_what_the_search_asked() -> None:
    """A question's text test as an entry stores it, and as the settle asks it again."""
    from amp_clipfix.analysis.cli_config import writes_cli
    from amp_clipfix.analysis.shape_texts import CLIP_VAL_KEYWORD

    assert certificate.test_of(certificate.form(None)) is None
    assert certificate.test_of(certificate.form(writes_cli)) is writes_cli
    noted = certificate.test_of(certificate.form(CLIP_VAL_KEYWORD))
    assert noted.condition == CLIP_VAL_KEYWORD.condition
    for text in (b"Trainer(gradient_clip_val=1.0)", b"x = 'gradient_clip_val'"):
        assert noted(Path("a.py"), text) is CLIP_VAL_KEYWORD(Path("a.py"), text)
    assert certificate.form(lambda path, data: True) == certificate.UNSTORED
