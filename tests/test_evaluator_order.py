"""The evaluator's answers do not depend on the order of its questions: a value cut short by a
cycle (a parameter followed through mutually recursive callers, a class attribute that reads
another that reads it back) or by a bound is never remembered for the questions after it."""

from __future__ import annotations

import ast
from pathlib import Path

from evaluated import one_module

from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.values import Lit, Opaque

# Mutual recursion passing `fused` on, called from outside with a value each; a recursive
# caller passing its own parameter on; two attributes of one class that read each other.
SOURCE = """\
import torch


def build_a(model, fused, depth):
    if depth:
        return build_b(model, fused, depth - 1)
    return torch.optim.AdamW(model.parameters(), fused=fused)


def build_b(model, fused, depth):
    if depth:
        return build_a(model, fused, depth - 1)
    return torch.optim.Adam(model.parameters(), fused=fused)


def walk(model, fused, depth):
    if depth:
        walk(model, fused, depth - 1)
    return torch.optim.SGD(model.parameters(), fused=fused)


class Settings:
    def __init__(self):
        self.fused = self.default
        self.default = self.fused

    def reset(self):
        self.fused = False
        self.default = True

    def build(self, model):
        first = torch.optim.AdamW(model.parameters(), fused=self.fused)
        second = torch.optim.Adam(model.parameters(), fused=self.default)
        return first, second


def main(model):
    build_a(model, True, 3)
    build_b(model, False, 2)
    walk(model, None, 4)
"""


def render(values: list[object], evaluator: Evaluator) -> list[str]:
    """A value as the resolution reads it: a literal, or decided at run time (and where)."""
    shown = []
    for value in evaluator.force(values):
        if isinstance(value, Lit):
            shown.append(f"Lit {value.text}")
        elif isinstance(value, Opaque):
            shown.append(f"Opaque {getattr(value.node, 'lineno', None)}")
        else:
            shown.append(type(value).__name__)
    return shown


def questions(tmp_path: Path) -> tuple[Evaluator, list[tuple[str, ast.expr, object]]]:
    """A fresh evaluator of SOURCE and its questions: every `fused=` argument, and the
    parameters' `fused` read where a call passes it on."""
    evaluator, summary = one_module(tmp_path, SOURCE)
    asked = []
    for node in ast.walk(summary.tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "fused":
                    asked.append((f"fused= on line {node.lineno}", keyword.value, summary))
            for arg in node.args:
                if isinstance(arg, ast.Name) and arg.id == "fused":
                    asked.append((f"fused passed on line {node.lineno}", arg, summary))
    return evaluator, sorted(asked, key=lambda item: item[0])


def answers(tmp_path: Path, reverse: bool) -> dict[str, list[str]]:
    evaluator, asked = questions(tmp_path)
    found = {}
    for label, node, summary in reversed(asked) if reverse else asked:
        found[label] = render(evaluator.ev(node, evaluator.ctx_of(summary, node)), evaluator)  # type: ignore[arg-type]
    return found


def test_answers_do_not_depend_on_the_order_of_questions(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    forward = answers(tmp_path / "one", reverse=False)
    backward = answers(tmp_path / "two", reverse=True)
    assert forward == backward
    # What each question gets is every value the program can give it, whichever came first.
    assert sorted(forward["fused= on line 7"]) == ["Lit False", "Lit True"]
    assert sorted(forward["fused= on line 13"]) == ["Lit False", "Lit True"]
    assert forward["fused= on line 19"] == ["Lit None"]
    assert sorted(forward["fused= on line 32"]) == ["Lit False", "Lit True"]
    assert sorted(forward["fused= on line 33"]) == ["Lit False", "Lit True"]


def test_a_settled_cycle_is_remembered_at_every_member(tmp_path: Path) -> None:
    """A cycle of parameters passed on is settled once (analysis/cycles.py): the run's memo
    keeps every member's value (the head's, and each parameter's callers inside it), never
    partial ones: each member read afterwards gives what it gives asked first, and no longer
    "decided at run time" where the cycle was cut (before: `Opaque 12` with the literals)."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    evaluator, asked = questions(tmp_path / "one")
    by_label = {label: (node, summary) for label, node, summary in asked}
    node, summary = by_label["fused passed on line 12"]
    ctx = evaluator.ctx_of(summary, node)  # type: ignore[arg-type]
    first = render(evaluator.ev(node, ctx), evaluator)
    assert first == ["Lit True", "Lit False"]  # where each is written: line 39, then 40
    assert (id(node), id(ctx)) in evaluator.memo  # the head
    assert ("ev", (id(node), id(ctx))) not in evaluator.heads  # no member is asked anew
    assert len(evaluator.callers_cache) == 2  # both parameters' callers, inside the cycle
    inner, inner_summary = by_label["fused passed on line 6"]
    inner_ctx = evaluator.ctx_of(inner_summary, inner)  # type: ignore[arg-type]
    assert (id(inner), id(inner_ctx)) in evaluator.memo
    after = render(evaluator.ev(inner, inner_ctx), evaluator)
    fresh, fresh_asked = questions(tmp_path / "two")
    label, alone, alone_summary = next(item for item in fresh_asked if item[0].endswith("line 6"))
    assert after == render(fresh.ev(alone, fresh.ctx_of(alone_summary, alone)), fresh), label  # type: ignore[arg-type]
    assert render(evaluator.ev(node, ctx), evaluator) == first
