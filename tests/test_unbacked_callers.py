"""A caller reading where the helper's clip has no scaled backward before it in the call's
statement reads the statements before that one only once a step follows the clip, and stops
there when they make no scaled backward either (analysis/tail_callers.py `reports_none`):
the clip can then be reported nowhere, so what follows the step is not asked about. The
findings are those of reading every caller whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from narrowed_search import asked, compare_searches

from amp_clipfix.rules import acf004

# `update` clips through `clip_all` after a plain backward (no scaler) and leaves the step to
# its callers: `Loop.run` is the second level of clip_all's callers. clip_all is also a value,
# so any call may clip (clip_tail's index is open). A scaled backward is written elsewhere (on
# a GradScaler: else the search is not run at all, analysis/scaler_backwards.py).
HELPERS = """
    import torch


    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


    CLIPPERS = [clip_all]


    def update(model, loss):
        loss.backward()
        clip_all(model)


    def backward(loss):
        torch.amp.GradScaler("cuda").scale(loss).backward()
    """

RUNNER = """
    import torch
    from helpers import update


    class Model:
        def fit(self, optimizer):
            optimizer.step(1)


    class Loop:
        def run(self, runner, model, optimizer, loss):
            scaler = torch.amp.GradScaler("cuda")
    BEFORE
            update(model, loss)
            scaler.step(optimizer)
            runner.model.fit(optimizer)
    """

# `runner` is followed through every script calling `Loop().run(...)`: an evaluation worth
# leaving out.
SCRIPT = """
    import torch
    from runner import Loop, Model


    class Runner{index}:
        def __init__(self):
            self.model = Model()


    def main{index}(*arguments):
        Loop().run(Runner{index}(), torch.nn.Linear(1, 1), *arguments)
    """

BEFORE = {
    "nothing": "",
    "a plain backward": "loss.backward()",
    "a scaled backward": "scaler.scale(loss).backward()",
    "a scaled backward, then unscaled": "scaler.scale(loss).backward()\nscaler.unscale_(optimizer)",
}
FOUND = {"a scaled backward"}
UNBACKED = {"nothing", "a plain backward"}


def project(before: str) -> dict[str, str]:
    lines = "\n".join(f"            {line}" for line in before.splitlines())
    files = {"helpers.py": HELPERS, "runner.py": RUNNER.replace("    BEFORE", lines)}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(8)})
    return files


def whole_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search before `reports_none`: every caller read whole."""
    monkeypatch.setattr(acf004, "reports_none", lambda *arguments: False)


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_same_findings_as_whole_readings(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = compare_searches(project(BEFORE[name]), tmp_path, monkeypatch, whole_readings)
    assert ("ACF004" in compared.findings) == (name in FOUND)


@pytest.mark.parametrize("name", sorted(UNBACKED))
def test_what_follows_the_step_of_an_unbacked_clip_is_not_asked_about(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No scaled backward comes before update's clip in `Loop.run`: once `scaler.step` follows
    the clip and the statements before the call make none, `runner.model.fit` is never
    evaluated; a whole reading evaluates it."""
    compared = compare_searches(project(BEFORE[name]), tmp_path, monkeypatch, whole_readings)
    assert asked(compared.wider, tmp_path / "wider" / "runner.py", "runner.model.fit")
    assert not asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")


def test_a_scaled_backward_before_the_call_reads_the_caller_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statements before the call make a scaled backward: the clip may be reported, and
    the reading goes on to its end (the finding is the whole reading's)."""
    before = BEFORE["a scaled backward"]
    compared = compare_searches(project(before), tmp_path, monkeypatch, whole_readings)
    assert asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")


NO_STEP = """
    import torch
    from helpers import update


    class Model:
        def fit(self, optimizer):
            optimizer.step(1)


    class Loop:
        def run(self, runner, model, optimizer, loss):
            scaler = torch.amp.GradScaler("cuda")
            runner.model.fit(optimizer)
            update(model, loss)
            print(scaler)
    """


def test_a_clip_with_no_step_after_it_reads_nothing_before_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No step follows the clip: it is reported nowhere whatever comes before, and the
    statements before the call are not read (`runner.model.fit` is among them)."""
    files = {**project(""), "runner.py": NO_STEP}
    compared = compare_searches(files, tmp_path, monkeypatch, whole_readings)
    assert "ACF004" not in compared.findings
    assert not asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")
