"""A call that passes an argument written with a function's name is asked what its callee is
only when that argument may be the function (analysis/passed.py `may_be_passed`): a parameter
of the function it is written in never is (`passes` reads it so), and a callee found through
that parameter's callers costs their search."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module

from amp_clipfix.analysis import passed
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Inst

SOURCE = """\
import lightning as L


class Fused(L.LightningModule):
    pass


class Wrapper:
    def step(self, model):
        trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
        trainer.fit(model)


class Logger:
    def add_scalars(self, scalar_dict, step=0):
        {passing}


def log_all(loggers, scalars):
    for logger in loggers:
        logger.add_scalars(scalars, step=3)


def run(fn, model):
    return fn(model)


def main():
    wrapper = Wrapper()
    {call}
"""


def model_classes(evaluator: Evaluator, summary: Summary) -> list[str]:
    """What `model` in `trainer.fit(model)` may hold, by class."""
    (fit,) = summary.calls("fit")
    model = fit.args[0]
    values = evaluator.force(evaluator.ev(model, evaluator.ctx_of(summary, model)))
    return sorted(v.cls.node.name if isinstance(v, Inst) else type(v).__name__ for v in values)


def asked(evaluator: Evaluator, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The expressions evaluated from now on, as written."""
    seen: list[str] = []
    original = evaluator.ev

    def ev(node: ast.AST, ctx: object) -> list[object]:
        seen.append(ast.unparse(node))
        return original(node, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluator, "ev", ev)
    return seen


@pytest.mark.parametrize(
    "passing",
    ['scalar_dict.setdefault("step", step)', "scalar_dict.update(step=step)", "print(step)"],
)
def test_a_parameter_passed_on_is_no_value_of_the_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passing: str
) -> None:
    """`step`, a parameter of `add_scalars`, written as an argument: the callee of the call
    passing it (`scalar_dict.setdefault`, whose receiver comes from every caller of
    `add_scalars`) is not evaluated, and the method's callers are what they were."""
    source = SOURCE.format(passing=passing, call="wrapper.step(Fused())")
    evaluator, summary = one_module(tmp_path, source)
    seen = asked(evaluator, monkeypatch)
    assert model_classes(evaluator, summary) == ["Fused"]
    callee = ast.unparse(ast.parse(passing).body[0].value.func)  # type: ignore[attr-defined]
    assert callee not in seen
    assert "scalars" not in seen  # `log_all`'s argument: add_scalars' callers never searched


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # the method itself passed (an attribute, no parameter): the helper's call is found
        ("run(wrapper.step, Fused())", ["Fused"]),
        # a local name holding it: read for its value, as before
        ("step = wrapper.step\n    run(step, Fused())", ["Fused"]),
        # a partial made of it, passed as a call: asked by its value
        ("import functools\n    run(functools.partial(wrapper.step), Fused())", ["Fused"]),
    ],
)
def test_an_argument_that_may_be_the_function_is_still_followed(
    tmp_path: Path, call: str, expected: list[str]
) -> None:
    source = SOURCE.format(passing='scalar_dict.setdefault("step", step)', call=call)
    evaluator, summary = one_module(tmp_path, source)
    assert model_classes(evaluator, summary) == expected


def test_without_the_test_the_callee_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spy above sees the callee when every argument is let through: what the first test
    asserts is the mechanism's doing."""
    monkeypatch.setattr(passed.PassedCalls, "may_pass_any", lambda *_: True)
    source = SOURCE.format(
        passing='scalar_dict.setdefault("step", step)', call="wrapper.step(Fused())"
    )
    evaluator, summary = one_module(tmp_path, source)
    seen = asked(evaluator, monkeypatch)
    assert model_classes(evaluator, summary) == ["Fused"]
    assert "scalar_dict.setdefault" in seen
