"""ACF004 asks whether a call at the last level of a clip helper's callers calls it only where
the caller makes a call in a later statement (analysis/tail_callers.py): the same findings as
the search that asks of every call, and the receiver of a call its caller ends with is never
evaluated."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from narrowed_search import asked, compare_searches

from amp_clipfix.analysis import callables, tail_callers
from amp_clipfix.rules import acf004

# clip_all clips and leaves the step to its callers; update and train_step pass it up: the
# loops calling train_step are the third level of its callers (callables.CALLER_DEPTH).
HELPERS = """
    import torch


    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


    def update(model):
        clip_all(model)


    def train_step(model):
        update(model)


    def finish(scaler, optimizer):
        scaler.step(optimizer)
        scaler.update()
    """

LOOP = """
    import torch
    from helpers import finish, train_step


    def loop(model, optimizer, data):
        scaler = torch.amp.GradScaler("cuda")
        for batch in data:
            scaler.scale(model(batch).mean()).backward()
{body}
    """


def program(body: str) -> dict[str, str]:
    return {"helpers.py": HELPERS, "train.py": LOOP.format(body=textwrap.indent(body, " " * 12))}


PROGRAMS: dict[str, dict[str, str]] = {
    "a step after the call": program("train_step(model)\nscaler.step(optimizer)"),
    "the call ends the loop": program("train_step(model)"),
    "the call then a return": program("train_step(model)\nreturn None"),
    "the step in the same statement": program("print(train_step(model), scaler.step(optimizer))"),
    "the step before the call in the loop": program("scaler.step(optimizer)\ntrain_step(model)"),
    "the call in a with block, the step after it": program(
        'with open("log"):\n    train_step(model)\nscaler.step(optimizer)'
    ),
    "the call in an if, the step in its else": program(
        "if batch:\n    train_step(model)\nelse:\n    scaler.step(optimizer)"
    ),
    "the step in a helper called after": program("train_step(model)\nfinish(scaler, optimizer)"),
    "module code": {
        "helpers.py": HELPERS,
        "train.py": textwrap.dedent(
            """
            import torch
            from helpers import train_step

            model = torch.nn.Linear(2, 2)
            optimizer = torch.optim.SGD(model.parameters())
            scaler = torch.amp.GradScaler("cuda")
            scaler.scale(model(torch.ones(2)).sum()).backward()
            train_step(model)
            scaler.step(optimizer)
            """
        ),
    },
}

FOUND = {
    "a step after the call",
    "the call in a with block, the step after it",
    "the call in an if, the step in its else",  # blocks read in source order, each once
    "the step in a helper called after",
    "module code",
}


def every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search before tail_callers: every call of the last level asked about."""
    monkeypatch.setattr(tail_callers, "may_step_after", lambda call, caller: True)
    readings = callables.caller_readings

    def every(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
        keywords.pop("last", None)
        return readings(*arguments, **keywords)

    monkeypatch.setattr(acf004, "caller_readings", every)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_asking_every_call(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = compare_searches(PROGRAMS[name], tmp_path, monkeypatch, every_call)
    assert ("ACF004" in compared.findings) == (name in FOUND)


# The third level's caller is a method whose receiver is a parameter: asking whether
# `runner.model.train_step(...)` calls the helper evaluates `runner` through every script.
RUNNER = """
    from helpers import update


    class Model:
        def train_step(self, model):
            update(model)


    class Loop:
        def run(self, runner, batch):
            runner.model.train_step(batch)
            return batch
    """

SCRIPT = """
    from runner import Loop, Model


    class Runner{index}:
        def __init__(self):
            self.model = Model()


    def main{index}(batch):
        Loop().run(Runner{index}(), batch)
    """


def test_a_call_its_caller_ends_with_is_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Loop.run` ends with its call of `train_step` (a `return` makes no call): whether
    `runner.model.train_step` is `Model.train_step` is never asked, so `runner` is not followed
    to the scripts; asking every call does. The findings are the same (none)."""
    files = {**program("scaler.step(optimizer)"), "runner.py": RUNNER}  # a scaled backward
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(8)})
    compared = compare_searches(files, tmp_path, monkeypatch, every_call)
    wider, kept = tmp_path / "wider" / "runner.py", tmp_path / "kept" / "runner.py"
    assert asked(compared.wider, wider, "runner.model.train_step")
    assert not asked(compared.kept, kept, "runner.model.train_step")
    assert not asked(compared.kept, kept, "runner")
