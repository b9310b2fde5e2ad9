"""ACF005's readings (analysis/manual.py `manual_reads`): whether a decorator replaces a
function's body is asked only of the functions the search reads (a method of a module that may
optimize by hand, or a function whose lines write `manual_backward`), never of the other
functions of the file (a test file's `@pytest.mark.parametrize(...)` functions: 1,088
evaluations on the Lightning tree that nothing else needed). The readings are the same ones, in
the same order, as when every function's decorators were asked first: the output is compared
with that order's (`asked_first`, the order this replaced) on programs where a decorator
replaces a read function, keeps it, or decorates a function that is not read."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import write

from amp_clipfix.analysis import manual
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.order import Body, functions
from amp_clipfix.analysis.values import ClsV
from amp_clipfix.cli import main
from amp_clipfix.rules import acf005

HEADER = """\
import functools

import lightning as L
import torch


def register(*names):
    def keep(fn):
        return fn

    return keep


def replace_with_wrapper(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return None

    return wrapper


def clip(module, opt):
    torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
    opt.step()
"""

MANUAL = """

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    {decorator}
    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

AUTOMATIC = """

class Other(L.LightningModule):
    @register("a", "b")
    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()


class Helper:
    @register("c")
    def run(self, module, opt):
        clip(module, opt)
"""

OUTSIDE = """

{decorator}
def step_by_hand(module, opt):
    loss = module.layer(module.batch).sum()
    module.manual_backward(loss)
    torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
    opt.step()
"""

TRAIN = """

trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
step_by_hand(Model(), torch.optim.SGD(Model().parameters(), lr=0.1))
"""

DECORATORS = {
    "none": "",
    "kept": '@register("x")',
    "replaced": "@replace_with_wrapper",
}


def asked_first(facts: ProjectFacts, file: FileFacts) -> Iterator[tuple[Body, ClsV | None]]:
    """`manual_reads` as it was: every function's decorators asked before anything else."""
    written = {n for n, line in enumerate(file.data.splitlines(), 1) if b"manual_backward" in line}
    inside: set[int] = set()
    for function in functions(file):
        if isinstance(function, ast.Module):
            continue
        lines = set(range(function.lineno, (function.end_lineno or function.lineno) + 1))
        inside |= lines
        summary = facts.evaluator.summary(file.path) or file.summary
        if manual.replaced(facts.evaluator, summary, function):
            continue
        owner = facts.class_of(file, function)
        if lines & written or (
            owner is not None
            and facts.is_lightning_module(owner)
            and facts.manual_optimization(owner) is not False
        ):
            yield function, owner
    if written - inside:
        yield file.tree, None


def run(
    root: Path, monkeypatch: pytest.MonkeyPatch, reads: object = None
) -> tuple[int, str, list[str], list[str]]:
    """`check --format json` over the project: its exit code and output, the functions ACF005
    read, and those whose decorators were asked about (`replaced`)."""
    read: list[str] = []
    asked: list[str] = []
    events = acf005.events
    replaced = manual.replaced

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(getattr(args[2], "name", "<module>"))
        return events(*args, **kwargs)

    def asking(ev, summary, function):  # type: ignore[no-untyped-def]
        asked.append(function.name)
        return replaced(ev, summary, function)

    with monkeypatch.context() as patched:
        patched.setattr(acf005, "events", counted)
        patched.setattr(manual, "replaced", asking)
        if reads is not None:
            patched.setattr(acf005, "manual_reads", reads)
        patched.chdir(root)
        arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", "."]
        result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, read, asked


def program(root: Path, method: str, outside: str) -> Path:
    text = HEADER + MANUAL.format(decorator=DECORATORS[method]) + AUTOMATIC
    text += OUTSIDE.format(decorator=DECORATORS[outside]) + TRAIN
    write(root, "train.py", text)
    return root


def test_the_decorators_of_functions_not_read_are_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = program(tmp_path, "kept", "kept")

    code, output, read, asked = run(root, monkeypatch)

    # read: the manual module's methods and the function writing `manual_backward`
    assert sorted(read) == ["__init__", "configure_optimizers", "step_by_hand", "training_step"]
    assert sorted(asked) == sorted(read)  # not `Other.training_step`, `Helper.run`, `clip`...
    assert code == 1
    assert output.count('"code": "ACF005"') == 2


@pytest.mark.parametrize("method", sorted(DECORATORS))
@pytest.mark.parametrize("outside", sorted(DECORATORS))
def test_the_same_readings_and_report_as_asking_every_function_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, outside: str
) -> None:
    root = program(tmp_path, method, outside)

    now = run(root, monkeypatch)
    before = run(root, monkeypatch, asked_first)

    assert now[:3] == before[:3]
    expected = ["__init__", "training_step", "configure_optimizers", "step_by_hand"]
    assert sorted(now[2]) == [
        name
        for name in sorted(expected)
        if not (name == "training_step" and method == "replaced")
        and not (name == "step_by_hand" and outside == "replaced")
    ]
    findings = (method != "replaced") + (outside != "replaced")
    assert now[1].count('"code": "ACF005"') == findings
    assert now[0] == (1 if findings else 0)
