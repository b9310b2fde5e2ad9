"""ACF005's and ACF006's per-reading gate (analysis/backward_reach.py): a function whose reading
can meet no backward is not read. Each project below has its finding's backward reached one way
(a method of another class named like one of the module's, a base's method through `self`, an
alias import, `getattr`, a decorator, a backward handed on, a notebook): the report is the same
bytes with the gate and with every reading made, and a gate that leaves every reading out loses
the finding (so the case goes through the gate). Readings that meet no backward are left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import backward_reach
from amp_clipfix.cli import main

TRAINER = """\
import lightning as L
import torch

from model import Model

trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

HEAD = """\
import lightning as L
import torch

# the module's training step calls manual_backward, itself or through a helper
"""

MODULE = """

class Model({base}L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)
{init}
    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        {backward}
        torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def validation_step(self, batch, batch_idx):
        self.log("v", self.layer(batch).sum())
"""


def module(backward: str, head: str = "", base: str = "", init: str = "") -> str:
    return HEAD + head + MODULE.format(backward=backward, base=base, init=init)


CASES = {
    "direct": {"model.py": module("self.manual_backward(loss)")},
    # `run` is also a method of a class whose `run` makes no backward: the one called does
    "another class's method": {
        "model.py": module(
            "self.runner.run(self, loss)",
            head=(
                "\n\nclass Quiet:\n    def run(self, module, loss):\n        return loss\n"
                "\n\nclass Runner:\n    def run(self, module, loss):\n"
                "        module.manual_backward(loss)\n"
            ),
            init="        self.runner = Runner()\n",
        )
    },
    "a base's method through self": {
        "model.py": module(
            "self.backward_of(loss)",
            head=(
                "\n\nclass Mixin:\n    def backward_of(self, loss):\n"
                "        self.manual_backward(loss)\n"
            ),
            base="Mixin, ",
        )
    },
    "two methods down through self": {
        "model.py": module(
            "self.step_all(loss)",
            head=(
                "\n\nclass Mixin:\n    def step_all(self, loss):\n        self.backward_of(loss)\n"
                "\n    def backward_of(self, loss):\n        self.manual_backward(loss)\n"
            ),
            base="Mixin, ",
        )
    },
    "getattr": {
        "model.py": module(
            'getattr(self, "backward_of")(loss)',
            head=(
                "\n\nclass Mixin:\n    def backward_of(self, loss):\n"
                "        self.manual_backward(loss)\n"
            ),
            base="Mixin, ",
        )
    },
    "a decorator": {
        "helpers.py": (
            "import functools\n\n\ndef logged(function):\n    @functools.wraps(function)\n"
            "    def wrapper(*args, **kwargs):\n        return function(*args, **kwargs)\n\n"
            "    return wrapper\n\n\n@logged\ndef backward_of(module, loss):\n"
            "    module.manual_backward(loss)\n"
        ),
        "model.py": module("backward_of(self, loss)", head="from helpers import backward_of\n"),
    },
}

# Reached so, the finding is not made today with every reading made either: the gate must
# still answer "may" for the training step (the report is the same bytes).
UNFOUND = {
    "a backward held by an attribute, three helpers down": {
        "model.py": module(
            "self.first(loss)",
            head=(
                "\n\nclass Mixin:\n    def first(self, loss):\n        self.second(loss)\n"
                "\n    def second(self, loss):\n        self.third(loss)\n"
                "\n    def third(self, loss):\n        self.backward_fn(loss)\n"
            ),
            base="Mixin, ",
            init="        self.backward_fn = self.manual_backward\n",
        )
    },
    "an alias import": {
        "helpers.py": "def backward_of(module, loss):\n    module.manual_backward(loss)\n",
        "model.py": module(
            "step_back(self, loss)", head="from helpers import backward_of as step_back\n"
        ),
    },
    "a backward handed on": {
        "helpers.py": "def apply(backward, loss):\n    backward(loss)\n",
        "model.py": module("apply(self.manual_backward, loss)", head="from helpers import apply\n"),
    },
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in {"train.py": TRAINER, **files}.items():
        (root / name).write_text(text, "utf-8")


def report(project: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """`check --format json` of the project (its findings and errors, paths relative)."""
    monkeypatch.chdir(project)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1"]
    result = CliRunner().invoke(main, [*arguments, "--format", "json", "."])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def codes(found: dict) -> list[str]:
    return sorted(finding["code"] for finding in found["findings"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_report_is_the_same_with_every_reading_made(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, CASES[case])
    gated = report(tmp_path, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(backward_reach.BackwardReach, "may_meet", lambda *arguments: True)
        every = report(tmp_path, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(backward_reach.BackwardReach, "may_meet", lambda *arguments: False)
        eager = report(tmp_path, monkeypatch)

    assert gated == every
    assert "ACF005" in codes(gated)
    assert "ACF005" not in codes(eager)  # the finding goes through the gate


@pytest.mark.parametrize("case", sorted(UNFOUND))
def test_the_gate_reads_the_step_where_the_report_has_no_finding(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, UNFOUND[case])
    asked = gate_answers(monkeypatch)
    gated = report(tmp_path, monkeypatch)
    monkeypatch.undo()
    with monkeypatch.context() as patched:
        patched.setattr(backward_reach.BackwardReach, "may_meet", lambda *arguments: True)
        every = report(tmp_path, monkeypatch)

    assert gated == every
    assert asked["training_step"] is True


def gate_answers(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """The gate's answer per reading, by function name, as a run makes them."""
    asked: dict[str, bool] = {}
    original = backward_reach.BackwardReach.may_meet

    def noted(self, file, function, backward):  # type: ignore[no-untyped-def]
        asked[getattr(function, "name", "<module>")] = original(self, file, function, backward)
        return asked[getattr(function, "name", "<module>")]

    monkeypatch.setattr(backward_reach.BackwardReach, "may_meet", noted)
    return asked


def test_a_notebook_module_is_read_as_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": module("self.manual_backward(loss)").splitlines(keepends=True),
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": TRAINER.replace("from model import Model\n", "").splitlines(keepends=True),
        },
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook), "utf-8")
    gated = report(tmp_path, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(backward_reach.BackwardReach, "may_meet", lambda *arguments: True)
        every = report(tmp_path, monkeypatch)

    assert gated == every
    assert "ACF005" in codes(gated)


def test_readings_that_meet_no_backward_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, CASES["another class's method"])
    asked = gate_answers(monkeypatch)
    report(tmp_path, monkeypatch)

    assert asked["training_step"] is True
    assert asked["configure_optimizers"] is False
    assert asked["validation_step"] is False
    assert asked["__init__"] is False
