"""ACF008's two searches parse a file holding a plain `.backward()` only where its text can
hold what each reads (shape_texts.py): a module's method, which lies inside a `class`
statement (`PLAIN_BACKWARD_IN_CLASS`: the call written after a `class` keyword), or a
decorator's wrapper, a function its decorator returns by name (`PLAIN_BACKWARD_WRAPPER`: a
`return NAME` of a `def NAME` in the text). Before, every file writing the call was parsed:
on the Lightning tree 14, of which 7 write it only in functions and scripts (train loops, test
functions). On the 14 corpora and the fixtures (1,415 files holding `.backward(`), every file
whose tree holds such a call passes (`bench/README.md`, "Session 23, rules")."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from spied import check_counting_parses

from amp_clipfix.analysis import shape_texts
from amp_clipfix.analysis.shape_texts import PLAIN_BACKWARD_IN_CLASS, PLAIN_BACKWARD_WRAPPER
from amp_clipfix.cli import main

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def plain(node: ast.AST) -> bool:
    """ACF008's call (acf008.plain_backward, the scaled form aside)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        and not node.args
    )


def in_a_method(tree: ast.AST) -> bool:
    """A plain backward in a method of a class (training.manual_modules' methods)."""
    return any(
        isinstance(method, ast.FunctionDef) and any(map(plain, ast.walk(method)))
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for method in cls.body
    )


def in_a_wrapper(tree: ast.AST) -> bool:
    """A plain backward in a function another returns by name (decorators.decorator_of)."""
    for outer in ast.walk(tree):
        if not isinstance(outer, FUNCTIONS):
            continue
        names = {
            n.value.id
            for n in ast.walk(outer)
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
        }
        if any(
            isinstance(inner, FUNCTIONS)
            and inner is not outer
            and inner.name in names
            and any(map(plain, ast.walk(inner)))
            for inner in ast.walk(outer)
        ):
            return True
    return False


GAPS = ["", " ", " \\\n    ", "  # a note: return x\n    "]
CALLS = ["loss.backward()", "(loss\n        .backward)()", "loss.ｂackward(retain_graph=True)"]
NAMES = ["wrapper", "ｗrapper", "inner"]


def program(rng: random.Random) -> str:
    """A module placing a plain backward in one of the places a file writes it: a method
    (maybe of a class inside a function), a function, a wrapper returned by name (spelled
    another way NFKC folds, in brackets, over a continuation), a wrapper returned otherwise."""
    call, gap = rng.choice(CALLS), rng.choice(GAPS)
    name, returned = rng.choice(NAMES), rng.choice(NAMES)
    place = rng.choice(["method", "nested class", "function", "wrapper", "lambda", "module"])
    head = rng.choice(["", "x = 'class'\n", "# class Model:\n", "import torch\n"])
    if place == "method":
        body = f"class Model:\n    def step(self, loss):\n        {call}\n"
    elif place == "nested class":
        body = f"def make():\n    class Model:\n        def step(self, loss):\n            {call}\n"
    elif place == "function":
        body = f"def train(loss):\n    {call}\n"
    elif place == "wrapper":
        closing = rng.choice(["", "(", "( # c\n    "])
        back = ")" if closing else ""
        defined = rng.choice(["def", "async def"])
        body = (
            f"def deco(fn):\n    {defined} {name}(self, loss):\n        {call}\n"
            f"    return{gap or ' '}{closing}{returned}{back}\n"
        )
    elif place == "lambda":
        body = f"step = lambda loss: {call}\n"
    else:
        body = f"{call}\n"
    tail = rng.choice(["", "class Later:\n    pass\n", "def other():\n    return other\n"])
    return head + body + tail


def test_a_text_whose_tree_holds_a_method_s_or_a_wrapper_s_call_passes() -> None:
    rng = random.Random(23)
    checked = refused = 0
    for _ in range(3000):
        text = program(rng)
        tree = ast.parse(text)
        data = text.encode("utf-8")
        checked += 1
        in_class, wrapper = PLAIN_BACKWARD_IN_CLASS(None, data), PLAIN_BACKWARD_WRAPPER(None, data)
        if in_a_method(tree):
            assert in_class, text
        if in_a_wrapper(tree):
            assert wrapper, text
        refused += not in_class and not wrapper
    assert checked == 3000
    assert refused > 300  # the tests refuse files: functions, lambdas, module code


@pytest.mark.parametrize(
    "text",
    [
        "def train(model, loss):\n    loss.backward()\n\n\nclass Later:\n    pass\n",
        "def train(loss):\n    loss.backward()\n    return train_step\n",
        "def deco(fn):\n    wrapper = functools.wraps(fn)(lambda l: l.backward())\n"
        "    return wrapper\n",
        "for batch in data:\n    model(batch).sum().backward()\n",
    ],
)
def test_a_text_without_a_method_or_a_wrapper_fails(text: str) -> None:
    tree = ast.parse(text)
    assert not in_a_method(tree) and not in_a_wrapper(tree)
    data = text.encode("utf-8")
    assert not PLAIN_BACKWARD_IN_CLASS(None, data) and not PLAIN_BACKWARD_WRAPPER(None, data)


MODULE = """\
import functools

import lightning as L
import torch

from loops import manual


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    @manual
    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        loss.backward()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed")
trainer.fit(Model())
"""

LOOPS = """\
import functools


def manual(step):
    @functools.wraps(step)
    def run(self, batch, batch_idx):
        opt = self.optimizers()
        loss = step(self, batch, batch_idx)
        loss.backward()
        opt.step()

    return (run)
"""

SCRIPT = """\
import torch


def train(model, data, optimizer):
    for batch in data:
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
"""


def project(root: Path) -> Path:
    (root / "model.py").write_text(MODULE, encoding="utf-8")
    (root / "loops.py").write_text(LOOPS, encoding="utf-8")
    (root / "script.py").write_text(SCRIPT, encoding="utf-8")
    return root


def report(root: Path) -> str:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    return CliRunner().invoke(main, arguments).output


def test_the_report_equals_that_of_parsing_every_file_with_the_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The method's and the wrapper's plain backward are found, as when every file writing
    the call is parsed for both searches."""
    tested = report(project(tmp_path))
    found = [(f["code"], Path(f["sites"][0]["path"]).name) for f in json.loads(tested)["findings"]]
    assert found == [("ACF008", "loops.py"), ("ACF008", "model.py")]
    monkeypatch.setattr(shape_texts.MayWrite, "__call__", lambda self, path, data: True)
    assert report(tmp_path) == tested


def test_a_script_s_plain_backward_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`script.py` writes `loss.backward()` in a function no decorator returns and has no
    class: ACF008 does not parse it (it did)."""
    code, _, parsed = check_counting_parses(project(tmp_path), monkeypatch)
    assert code == 1
    assert "model.py" in parsed and "loops.py" in parsed
    assert "script.py" not in parsed
