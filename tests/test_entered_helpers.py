"""A helper a reading enters is read with the arguments of the call that enters it
(analysis/entered.py): what the helper's own calls run is asked for the values that call gives
its parameters, not for every call of the helper in the project.

`backward(wrapper, loss)` is called by two loops, one with a wrapper that scales the loss and
one with a wrapper that does not. Asked for every caller, `wrapper.backward(loss)` ran both
wrappers' `backward` in both loops: the plain loop's clip was reported as clipping scaled
gradients (a finding on a3d197b). Read for its own call, each loop meets its own wrapper.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from evaluated import one_module
from test_incremental import write

from amp_clipfix.analysis.entered import entered_context
from amp_clipfix.analysis.values import Fn, Inst
from amp_clipfix.cli import main

WRAPPERS = """\
import torch


class Scaled:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")

    def backward(self, loss):
        self.scaler.scale(loss).backward()


class Plain:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")

    def backward(self, loss):
        loss.backward()


"""

LOOP = """

def train_{name}(model, optimizer, data):
    wrapper = {cls}()
    for batch in data:
        {call}
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        wrapper.scaler.step(optimizer)
        wrapper.scaler.update()
"""

HELPERS = {
    "a function": (
        "def backward(wrapper, loss):\n    wrapper.backward(loss)\n",
        "backward(wrapper, model(batch).mean())",
    ),
    "keywords": (
        "def backward(loss=None, wrapper=None):\n    wrapper.backward(loss)\n",
        "backward(wrapper=wrapper, loss=model(batch).mean())",
    ),
    "a method": (
        "class Runner:\n    def backward(self, wrapper, loss):\n        wrapper.backward(loss)\n",
        "Runner().backward(wrapper, model(batch).mean())",
    ),
    "two levels": (
        "def backward(wrapper, loss):\n    wrapper.backward(loss)\n\n\n"
        "def step(wrapper, loss):\n    backward(wrapper, loss)\n",
        "step(wrapper, model(batch).mean())",
    ),
}


def program(helper: str, call: str) -> str:
    """The wrappers, the helper, then a loop with each wrapper calling it."""
    loops = (
        LOOP.format(name=n, cls=c, call=call) for n, c in (("scaled", "Scaled"), ("plain", "Plain"))
    )
    return WRAPPERS + helper + "".join(loops)


def findings(root: Path) -> list[tuple[str, int]]:
    """The findings' codes and lines, as the JSON report gives them."""
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code in (0, 1), result.output
    return sorted((f["code"], f["line"]) for f in json.loads(result.output)["findings"])


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("name", sorted(HELPERS))
def test_each_loop_meets_the_wrapper_its_own_call_passes(name: str, tmp_path: Path) -> None:
    """Only the scaled loop's clip is reported (a3d197b also reported the plain loop's)."""
    source = program(*HELPERS[name])
    write(tmp_path, "train.py", source)
    scaled_clip = line_of(source, "def train_scaled") + 4
    assert findings(tmp_path) == [("ACF004", scaled_clip)]


def test_a_helper_entered_again_through_one_call_shares_its_context(tmp_path: Path) -> None:
    """One context per helper, call and caller's context: a second reading entering it there
    reads the answers of the first; another call gets its own, binding its own arguments."""
    source = program(*HELPERS["a function"])
    evaluator, summary = one_module(tmp_path, source)
    helper = next(
        n for n in summary.tree.body if isinstance(n, ast.FunctionDef) and n.name == "backward"
    )
    fn = Fn(helper, summary)
    calls = [
        n
        for n in ast.walk(summary.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "backward"
    ]
    assert len(calls) == 2
    contexts = [entered_context(evaluator, fn, c, evaluator.ctx_of(summary, c)) for c in calls]
    again = entered_context(evaluator, fn, calls[0], evaluator.ctx_of(summary, calls[0]))
    assert again is contexts[0] and contexts[1] is not contexts[0]
    read = helper.body[0]
    assert isinstance(read, ast.Expr) and isinstance(read.value, ast.Call)
    receiver = read.value.func.value  # type: ignore[attr-defined]
    held = [
        [
            v.cls.node.name
            for v in evaluator.force(evaluator.ev(receiver, ctx))
            if isinstance(v, Inst)
        ]
        for ctx in contexts
    ]
    assert held == [["Scaled"], ["Plain"]]
