"""A function passed as a value with its arguments (analysis/passed.py): the helpers' calls bind
its parameters, the search is bounded, and what a bound cut short is never remembered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module

from amp_clipfix.analysis import passed
from amp_clipfix.analysis.values import Inst, Opaque

SOURCE = """\
import lightning as L


class Fused(L.LightningModule):
    pass


def run_benchmark(fn, args):
    return fn(*args)


{helpers}

class Bench:
    def train(self, model, loader):
        trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
        trainer.fit(model, loader)

    def go(self, loader):
        {first}(fn=self.train, args=(Fused(), loader))
"""


def helpers(count: int) -> str:
    """`hand_1(fn, args)` calls `hand_2(fn, args)` ... the last calls run_benchmark."""
    lines = []
    for index in range(1, count + 1):
        inner = f"hand_{index + 1}" if index < count else "run_benchmark"
        lines += [f"def hand_{index}(fn, args):", f"    return {inner}(fn, args)", "", ""]
    return "\n".join(lines)


def model_values(tmp_path: Path, source: str) -> tuple[list[object], object]:
    """What `model` in `trainer.fit(model, loader)` may hold, and the evaluator asked."""
    evaluator, summary = one_module(tmp_path, source)
    (fit,) = summary.calls("fit")
    model = fit.args[0]
    assert isinstance(model, ast.Name)
    return evaluator.force(evaluator.ev(model, evaluator.ctx_of(summary, model))), evaluator


def classes(values: list[object]) -> list[str]:
    return [v.cls.node.name if isinstance(v, Inst) else type(v).__name__ for v in values]


def test_the_tuple_a_helper_spreads_reaches_the_parameters(tmp_path: Path) -> None:
    values, _ = model_values(tmp_path, SOURCE.format(helpers="", first="run_benchmark"))
    assert classes(values) == ["Fused"]


def test_a_callable_handed_on_through_helpers_is_followed_three_deep(tmp_path: Path) -> None:
    source = SOURCE.format(helpers=helpers(2), first="hand_1")
    values, _ = model_values(tmp_path, source)
    assert classes(values) == ["Fused"]  # hand_1 -> hand_2 -> run_benchmark -> fn(*args)
    deeper = tmp_path / "deeper"
    deeper.mkdir()
    values, _ = model_values(deeper, SOURCE.format(helpers=helpers(3), first="hand_1"))
    # One helper beyond FORWARD_DEPTH: decided at run time. That bound is the question's own
    # (every search starts at it), so the answer is the same whenever it is asked.
    assert classes(values) == ["Opaque"]


def test_a_search_a_bound_cut_is_asked_again_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = SOURCE.format(helpers="", first="run_benchmark")
    monkeypatch.setattr(passed, "MAX_NESTED", 0)  # every search is cut
    values, evaluator = model_values(tmp_path, source)
    assert all(isinstance(v, Opaque) for v in values) and evaluator.cuts > 0
    assert evaluator.callers_cache == {} and evaluator.memo == {}  # nothing cut was kept
    monkeypatch.setattr(passed, "MAX_NESTED", 2)
    summary = next(iter(evaluator.summaries.values()))
    (fit,) = summary.calls("fit")
    again = evaluator.ev(fit.args[0], evaluator.ctx_of(summary, fit.args[0]))
    assert classes(evaluator.force(again)) == ["Fused"]


PARTIAL = """\
import functools
import threading

import lightning as L


class Fused(L.LightningModule):
    pass


class Plain(L.LightningModule):
    pass


def run_benchmark(fn, args):
    return fn(*args)


class Bench:
    def train(self, loader, model=None):
        trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
        trainer.fit(model, loader)

    def go(self, loader):
        {go}
"""


@pytest.mark.parametrize(
    ("go", "expected"),
    [
        # the partial's positional argument first, then the call's; its keyword binds `model`
        ("run_benchmark(functools.partial(self.train, model=Fused()), (loader,))", ["Fused"]),
        # a keyword of the call overrides the partial's
        ("functools.partial(self.train, model=Plain())(loader, model=Fused())", ["Fused"]),
        ("job = functools.partial(self.train, loader, Fused())\n        job()", ["Fused"]),
        (
            "job = functools.partial(self.train, loader)\n"
            "        threading.Thread(target=job, kwargs={'model': Fused()}).start()",
            ["Fused"],
        ),
    ],
)
def test_a_partial_binds_its_arguments_before_the_calls(
    tmp_path: Path, go: str, expected: list[str]
) -> None:
    values, _ = model_values(tmp_path, PARTIAL.format(go=go))
    assert classes(values) == expected
