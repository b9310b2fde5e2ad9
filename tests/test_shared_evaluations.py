"""An expression evaluated in a context made for one followed call (a function's parameters
bound from a caller's arguments) that reaches none of the parameters the context binds is
evaluated once for every such context of its function, class, module, depth and run-time
receiver (returns.shared_key): mmengine evaluated the same names and attributes again in each
of its factories' calling contexts (5,129 of 8,068 evaluations ran in such contexts)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module
from test_hostile_budget import findings_of

from amp_clipfix.analysis import returns
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.values import Ext

SOURCE = """\
FUSED = True


def make(model, flag):
    chosen = flag
    base = FUSED
    return base, chosen, model
"""


def returned(summary: object) -> tuple[ast.FunctionDef, list[ast.expr]]:
    make = next(n for n in summary.tree.body if isinstance(n, ast.FunctionDef))  # type: ignore[attr-defined]
    value = make.body[-1].value  # type: ignore[attr-defined]
    return make, value.elts


def test_what_reads_no_bound_parameter_is_evaluated_once_for_every_call(tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, SOURCE)
    make, (base, chosen, model) = returned(summary)
    one = Ctx(summary, make, None, {"model": [Ext("a.model")], "flag": [Ext("a.flag")]}, 1)
    two = Ctx(summary, make, None, {"model": [Ext("b.model")], "flag": [Ext("b.flag")]}, 1)
    first = evaluator.ev(base, one)
    spent = evaluator.budget
    assert evaluator.ev(base, two) is first  # no evaluation spent: the first context's value
    assert evaluator.budget == spent
    # `chosen` reads `flag` through its local binding, `model` is a parameter: each its own
    assert [v.qname for v in evaluator.ev(chosen, one)] == ["a.flag"]  # type: ignore[attr-defined]
    assert [v.qname for v in evaluator.ev(chosen, two)] == ["b.flag"]  # type: ignore[attr-defined]
    assert [v.qname for v in evaluator.ev(model, two)] == ["b.model"]  # type: ignore[attr-defined]


def test_other_depths_and_unbound_contexts_are_not_shared(tmp_path: Path) -> None:
    """The depth bounds what a value may reach (a call followed at MAX_DEPTH is decided at
    run time): a context at another depth evaluates the expression again; a context with no
    bindings is one object already and has the run's memo."""
    evaluator, summary = one_module(tmp_path, SOURCE)
    make, (base, _, _) = returned(summary)
    one = Ctx(summary, make, None, {"flag": [Ext("a.flag")]}, 1)
    deeper = Ctx(summary, make, None, {"flag": [Ext("a.flag")]}, 2)
    assert evaluator.shared_key(base, one) != evaluator.shared_key(base, deeper)
    assert evaluator.shared_key(base, evaluator.ctx(summary, make, None)) is None
    first = evaluator.ev(base, one)
    assert evaluator.ev(base, deeper) is not first


def factory_callers(mains: int, links: int) -> str:
    """`build` returns `name` (each caller's own literal: a calling context of its own, and an
    answer of its own) and walks `links` local names that read no parameter before the
    optimizer it returns with it."""
    lines = ["import lightning as L", "import torch", "", "FUSED = True", ""]
    lines += ["def build(model, name):", "    x0 = FUSED"]
    lines += [f"    x{index + 1} = x{index}" for index in range(links)]
    lines += [f"    return torch.optim.AdamW(model.parameters(), fused=x{links}), name", ""]
    for index in range(mains):
        lines += [
            f"def main{index}(model):",
            '    fabric = L.Fabric(precision="16-mixed")',
            f'    optimizer, _ = build(model, "n{index}")',
            "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
            "",
        ]
    return "\n".join(lines)


@pytest.mark.parametrize("shared", [True, False])
def test_a_factory_called_from_many_places_walks_its_own_names_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """Two callers and eight find the same (each Fabric clips a fused optimizer); the six more
    callers cost a few evaluations each, not the forty names again (116 -> 188 with the
    names shared, 161 -> 503 without)."""
    if not shared:  # what it was: the same findings, each context walking the names again
        monkeypatch.setattr(returns.CallReturns, "shared_key", lambda self, node, ctx: None)
    small, small_found = findings_of(tmp_path / "a", factory_callers(2, 40), monkeypatch)
    large, large_found = findings_of(tmp_path / "b", factory_callers(8, 40), monkeypatch)
    assert small_found == [("ACF001", "high")] * 2 + [("ACF007", "high")] * 2
    assert large_found == [("ACF001", "high")] * 8 + [("ACF007", "high")] * 8
    assert (large - small <= 6 * 20) is shared


ANSWERS = """\
import torch

OPTIMIZERS = {"adamw": torch.optim.AdamW([], fused=True)}


def make(name):
    key = name
    chosen = OPTIMIZERS[key]
    return chosen


def pick(name):
    return name


def wrap(name):
    return {"name": name}


def a():
    return make("a"), pick("a"), wrap("a")


def b():
    return make("b"), pick("b"), wrap("b")
"""


def calls_in(summary: object, name: str) -> tuple[ast.Call, ...]:
    function = next(n for n in summary.tree.body if getattr(n, "name", None) == name)  # type: ignore[attr-defined]
    return tuple(function.body[0].value.elts)


def test_an_answer_is_read_by_calls_that_agree_on_what_it_read(tmp_path: Path) -> None:
    """`make` writes `name` where the evaluator never reads it (a key decided at run time:
    one of the dict's values): its answer for `make("a")` is `make("b")`'s, found once
    (returns.read_answer); `pick` returns what it is given: each call its own answer."""
    evaluator, summary = one_module(tmp_path, ANSWERS)
    make_a, pick_a, _ = calls_in(summary, "a")
    make_b, pick_b, _ = calls_in(summary, "b")
    a_ctx, b_ctx = evaluator.ctx_of(summary, make_a), evaluator.ctx_of(summary, make_b)
    first = evaluator.ev(make_a, a_ctx)
    assert [type(v).__name__ for v in first] == ["Opt"]
    spent = evaluator.budget
    again = evaluator.ev(make_b, b_ctx)
    assert again[0] is first[0]
    assert spent - evaluator.budget <= 2  # the call and its callee's name, not `make`'s body
    picked = [
        evaluator.force(evaluator.ev(call, a_ctx if call is pick_a else b_ctx))
        for call in (pick_a, pick_b)
    ]
    assert [[v.value for v in values] for values in picked] == [["a"], ["b"]]  # type: ignore[attr-defined]


def test_an_answer_that_holds_its_call_context_is_not_read_by_other_calls(tmp_path: Path) -> None:
    """`wrap` returns a dict whose entry is its parameter, not evaluated yet (a Thunk in the
    call's context): what the entry holds is read later, from the call's bindings, so the
    answer of `wrap("a")` cannot be `wrap("b")`'s (returns.holds_context)."""
    evaluator, summary = one_module(tmp_path, ANSWERS)
    wrapped = []
    for name in "ab":
        call = calls_in(summary, name)[2]
        ctx = evaluator.ctx_of(summary, call)
        (made,) = evaluator.ev(call, ctx)
        wrapped.append([v.value for v in evaluator.force(made.entries["name"])])  # type: ignore[attr-defined]
    assert wrapped == [["a"], ["b"]]


REACH = """\
def f(a, b, c, items):
    x = a
    y = x + 1
    d = {}
    d["k"] = b
    items.append(c)
    z = y
    return z, d, items, lambda: c
"""


def test_the_parameters_an_expression_reaches_through_local_names(tmp_path: Path) -> None:
    """returns.reached_params, from each name's reach found once per function and name
    (name_reach): through assignments, a dict's stores and a list's appends."""
    evaluator, summary = one_module(tmp_path, REACH)
    function = summary.tree.body[0]
    z, d, items, closure = function.body[-1].value.elts  # type: ignore[attr-defined]
    assert evaluator.reached_params(function, z) == ("a",)
    assert evaluator.reached_params(function, d) == ("b",)
    assert evaluator.reached_params(function, items) == ("c", "items")
    assert evaluator.reached_params(function, closure) == ("c",)
    assert evaluator.shared_key(z, Ctx(summary, function, None, {"b": []}, 1)) is not None
    assert evaluator.shared_key(z, Ctx(summary, function, None, {"a": []}, 1)) is None


def test_a_context_is_found_wherever_a_value_holds_it() -> None:
    """An answer holding its call's context in a set, or in the run-time receiver of an inner
    call's context (an instance made in the call whose field is still an argument not
    evaluated), may read its bindings later: it is never shared by what it read."""
    from types import SimpleNamespace

    from amp_clipfix.analysis.frame import Thunk

    outer = Ctx(None, None, None, {"x": []})  # type: ignore[arg-type]
    pending = Thunk(ast.Name("x"), outer)
    receiver = SimpleNamespace(fields={"model": [pending]})
    inner = Ctx(None, None, None, {}, runtime=receiver)  # type: ignore[arg-type]
    assert returns.holds_context([inner], outer)
    assert returns.holds_context([frozenset({pending})], outer)
    assert not returns.holds_context([inner], Ctx(None, None, None, {}))  # type: ignore[arg-type]
