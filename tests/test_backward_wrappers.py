"""ACF008 asks whether a decorator returns a function (decorators.method_wrappers) only of the
functions whose lines can write a `.backward()` call, themselves or in a function inside them
(acf008.may_call_backward: `backward`, or a byte outside ASCII): a wrapper without one gives
no finding. The reports equal those of
asking every function, on wrappers that call it directly, in a nested function, spelled with a
fullwidth letter (NFKC), over a line continuation, beside wrappers that make none."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import write

from amp_clipfix.analysis import decorators
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.cli import main
from amp_clipfix.rules import acf008

PROGRAM = """\
# the wrapper calls `.backward(` by hand: the file holds the rule's word in every case
import functools

import lightning as L
import torch


def logged(step):
    @functools.wraps(step)
    def quiet(self, batch, batch_idx):
        return step(self, batch, batch_idx)

    return quiet


def alternating(step):
    @functools.wraps(step)
    def run(self, batch, batch_idx):
        opt = self.optimizers()
        loss = step(self, batch, batch_idx)
{backward}
        opt.step()
        opt.zero_grad()

    return run


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(8, 1)

    @alternating
    def training_step(self, batch, batch_idx):
        return self.layer(batch).mean()

    @logged
    def validation_step(self, batch, batch_idx):
        return self.layer(batch).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.layer.parameters())


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), torch.randn(16, 4, 8))
"""

BACKWARDS = {
    "direct": "        loss.backward(retain_graph=True)",
    "nested": "        def inner():\n            loss.backward()\n\n        inner()",
    "fullwidth": "        loss.\uff42ackward()",
    "continued": "        loss.\\\n            backward()",
    "scaled only": "        self.trainer.scaler.scale(loss).backward()",
    "none": "        self.manual_backward(loss)",
}


def report(root: Path) -> tuple[int, str]:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output


def every_function(summary: Summary, function: ast.AST) -> bool:
    """may_call_backward as if every function could: every function is asked about."""
    return True


@pytest.mark.parametrize("name", sorted(BACKWARDS))
def test_the_report_equals_that_of_asking_every_function(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAM.replace("{backward}", BACKWARDS[name]))
    gated = report(tmp_path)
    monkeypatch.setattr(acf008, "may_call_backward", every_function)
    assert report(tmp_path) == gated
    reported = '"ACF008"' in gated[1]
    assert reported == (name not in ("scaled only", "none")), gated[1]


def test_a_wrapper_without_a_plain_backward_is_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`quiet` (a wrapper of `logged`, which makes no backward) and the methods are not asked
    whether a decorator returns them; `run` is (fails where every function was asked)."""
    write(tmp_path, "train.py", PROGRAM.replace("{backward}", BACKWARDS["direct"]))
    asked: list[str] = []
    decorator_of = decorators.decorator_of

    def spied(ev: object, summary: Summary, wrapper: ast.AST) -> object:
        asked.append(getattr(wrapper, "name", "?"))
        return decorator_of(ev, summary, wrapper)  # type: ignore[arg-type]

    monkeypatch.setattr(decorators, "decorator_of", spied)
    code, _ = report(tmp_path)
    assert code == 1
    assert "run" in asked
    assert "quiet" not in asked and "configure_optimizers" not in asked
