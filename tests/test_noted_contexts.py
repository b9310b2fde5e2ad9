"""The contexts order.events notes for the calls of a function it reads (evaluate.note_contexts):
each call, its callee and the receivers under it are evaluated in the context of the function
read, and ctx_of gives them that context without going down from the module's statement to
each of them (Summary.find_down). Every context ctx_of gives is the one `Summary.enclosing`
gives, on the fixtures of the rules that read in run order and on programs whose callees hold
lambdas, comprehensions, f-strings, walruses, nested functions and classes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_cases import case_folders
from test_incremental import write

from amp_clipfix.analysis import order
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.cli import main

PROGRAM = """\
import lightning as L
import torch


def helper(module, opt, loss):
    module.manual_backward(loss)
    (lambda o: o)(opt).step()
    [o.zero_grad() for o in (opt,)]


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)
        self.opts = {"main": None}

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        loss = self.layer(batch).sum()
        if (n := len(batch)) > 0:
            self.manual_backward(loss)
        print(f"{self.layer(batch).sum().item()} {n}")

        def closure(o=opt.param_groups[0]["lr"]):
            torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)

        class Local:
            step = opt.step

        helper(self, opt, loss)
        closure()
        self.opts["main"] = opt
        self.optimizers()[0].step() if isinstance(self.optimizers(), list) else opt.step()
        Local.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""


def checked_contexts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """ctx_of spied: each answer compared with the context `Summary.enclosing` gives; the
    mismatches listed (module name, line)."""
    wrong: list[tuple[str, int]] = []
    ctx_of = Evaluator.ctx_of

    def spied(self: Evaluator, summary: Summary, node: ast.AST) -> Ctx:
        found = ctx_of(self, summary, node)
        function, cls = summary.enclosing(node)
        if found is not self.ctx(summary, function, cls):
            wrong.append((summary.path.name, getattr(node, "lineno", 0)))
        return found

    monkeypatch.setattr(Evaluator, "ctx_of", spied)
    return wrong


def report(root: Path) -> tuple[int, str]:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output


def test_the_noted_contexts_are_those_of_the_enclosing_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAM)
    wrong = checked_contexts(monkeypatch)
    code, output = report(tmp_path)
    assert code == 1 and '"ACF005"' in output
    assert wrong == []


def test_the_report_is_the_same_without_the_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAM)
    noted = report(tmp_path)
    monkeypatch.setattr(Evaluator, "note_contexts", lambda self, summary, function, nodes: None)
    assert report(tmp_path) == noted


def worked_out_after_listing(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[ast.AST]:
    """The nodes order.events listed in a callee chain that ctx_of then had to work out a
    context for (Summary.enclosing: a way down the module's tree), in a check of `root`."""
    listed: dict[int, ast.AST] = {}  # the nodes held: their ids stay theirs
    callee_chain = order.callee_chain

    def noted(call: ast.Call) -> list[ast.AST]:
        found = callee_chain(call)
        listed.update((id(node), node) for node in found)
        return found

    worked_out: list[ast.AST] = []
    ctx_of = Evaluator.ctx_of

    def spied(self: Evaluator, summary: Summary, node: ast.AST) -> Ctx:
        if (id(summary), id(node)) not in self.node_contexts and id(node) in listed:
            worked_out.append(node)
        return ctx_of(self, summary, node)

    with monkeypatch.context() as patched:
        patched.setattr(order, "callee_chain", noted)
        patched.setattr(Evaluator, "ctx_of", spied)
        code, _ = report(root)
    assert code == 1 and listed
    return worked_out


def test_a_read_call_s_callee_is_not_looked_for_from_the_module_s_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The callees of the calls order.events classifies have their context once they are
    listed: ctx_of never works one out for them (without the notes it does, for each)."""
    write(tmp_path, "train.py", PROGRAM)
    assert worked_out_after_listing(tmp_path, monkeypatch) == []
    monkeypatch.setattr(Evaluator, "note_contexts", lambda self, summary, function, nodes: None)
    assert len(worked_out_after_listing(tmp_path, monkeypatch)) > 20


RUN_ORDER_RULES = ("ACF004", "ACF005", "ACF006")
CASES = [
    case
    for case in case_folders()
    if any(code in case.name or code == case.parent.name for code in RUN_ORDER_RULES)
    or "manual_optimization" in case.name
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_fixtures_contexts_are_those_of_the_enclosing_function(
    case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = checked_contexts(monkeypatch)
    report(case / "input")
    assert wrong == []
