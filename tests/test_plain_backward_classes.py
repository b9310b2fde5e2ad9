"""ACF008 asks whether a class is a module that optimizes by hand (its bases followed, their
modules parsed) only where a method of it, or the wrapper a decorator puts in place of one,
makes a plain backward call: a class without one holds no finding whatever it is
(rules/acf008.py `any_plain_backward`, training.manual_modules' `keep`). Before, every class of
a file writing `.backward(` in a class was asked, and every class a wrapper decorates."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from spied import check_counting_parses

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.cli import main
from amp_clipfix.rules import acf008

MODEL = """\
import lightning as L
import torch

from base import Base


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        loss.backward()
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Recorder(Base):
    def record(self, value):
        self.values.append(value)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model())
"""

BASE = """\
class Base:
    def __init__(self):
        self.values = []
"""

# A decorator whose wrapper writes `loss.backward()` only in a comment (its text passes
# ACF008's wrapper test) and a class elsewhere whose method it decorates.
DECORATOR = """\
import functools

import torch


def stepped(fn):
    @functools.wraps(fn)
    def wrapper(self, batch):
        loss = fn(self, batch)
        # not loss.backward(): the graph is kept for the caller
        torch.autograd.backward(loss, retain_graph=True)
        return loss

    return wrapper
"""

DECORATED = """\
from base import Base
from deco import stepped


class Summed(Base):
    @stepped
    def record(self, batch):
        return batch.sum()
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def asked_classes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the classes the run asks whether they are LightningModules."""
    asked: list[str] = []
    original = ProjectFacts.is_lightning_module

    def spied(self: ProjectFacts, cls: object) -> bool:
        asked.append(cls.node.name)  # type: ignore[attr-defined]
        return original(self, cls)  # type: ignore[arg-type]

    monkeypatch.setattr(ProjectFacts, "is_lightning_module", spied)
    return asked


def report(root: Path) -> dict[str, object]:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    return json.loads(CliRunner().invoke(main, arguments).output)  # type: ignore[no-any-return]


def test_a_class_without_a_plain_backward_is_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Recorder` makes no backward call: its base is not followed, so `base.py` (which no
    other question reads) is not parsed; the module's finding stands."""
    asked = asked_classes(monkeypatch)
    project = write(tmp_path, {"model.py": MODEL, "base.py": BASE})
    code, output, parsed = check_counting_parses(project, monkeypatch)
    assert code == 1
    assert "model.py:16:9: ACF008" in output
    assert parsed == ["model.py"]
    assert asked == ["Model"]


def test_a_wrapper_without_a_plain_backward_asks_nothing_of_its_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wrapper's text passes the wrapper test (a comment), its tree has no plain backward:
    the class it decorates is not asked about, its base's module not parsed."""
    asked = asked_classes(monkeypatch)
    files = {"model.py": MODEL.replace("Recorder(Base)", "Recorder"), "base.py": BASE}
    project = write(tmp_path, {**files, "deco.py": DECORATOR, "other.py": DECORATED})
    code, output, parsed = check_counting_parses(project, monkeypatch)
    assert code == 1
    assert output.count("ACF008") == 1
    assert "base.py" not in parsed and "deco.py" in parsed
    assert "Summed" not in asked and "Recorder" not in asked


def test_the_report_equals_that_of_asking_every_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every class kept (the test refused nothing), the same report, byte for byte."""
    files = {"model.py": MODEL, "base.py": BASE, "deco.py": DECORATOR, "other.py": DECORATED}
    project = write(tmp_path, files)
    kept = report(project)
    assert [f["code"] for f in kept["findings"]] == ["ACF008"]  # type: ignore[index]
    monkeypatch.setattr(acf008, "any_plain_backward", lambda file, methods: True)
    assert report(project) == kept


def methods_of(code: str) -> list[ast.FunctionDef]:
    tree = ast.parse(code)
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


class Lines:
    """What `any_plain_backward` reads of a file: its summary's lines."""

    def __init__(self, code: str) -> None:
        self.summary = type("S", (), {"lines": code.encode().splitlines()})()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("loss.backward()", True),
        ("loss.backward(retain_graph=True)", True),
        ("(loss\n        .backward)()", True),
        ("loss.ｂackward()", True),  # NFKC: Python reads `backward`
        ("self.backward()", False),  # on the module itself
        ("fabric.backward(loss)", False),  # given the loss: Fabric's or autograd's
        ("scaler.scale(loss).backward()", False),  # scaled: ACF004's
        ("self.manual_backward(loss)", False),
        ("x = 'loss.backward()'  # loss.backward()", False),  # text only
        ("pass", False),
    ],
)
def test_a_plain_backward_is_found_as_the_search_reads_it(body: str, expected: bool) -> None:
    code = f"class M:\n    def training_step(self, loss, fabric, scaler):\n        {body}\n"
    methods = methods_of(code)
    file: FileFacts = Lines(code)  # type: ignore[assignment]
    assert acf008.any_plain_backward(file, methods) is expected
    assert bool(acf008.plain_backward_calls(methods[0])) is expected
