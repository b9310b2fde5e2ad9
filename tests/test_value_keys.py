"""Values are keyed by what they are (analysis/values.memo_key), not by the object or the calling
context that made them: the returns memo (analysis/returns.py) meets equal arguments passed from
different calling contexts, and answers what a call returns once for them."""

from __future__ import annotations

import ast
from pathlib import Path

from evaluated import one_module

from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.values import ClsV, Ext, Lit, Opaque, Opt, memo_key

# `build` is reached through `load` from five callers, each passing its own path: `load` is
# followed in five bound contexts, and in each its local `conf` holds the same value (what the
# unknown `read` makes of the same `override`), whatever the path (NeMo's
# `load_config_and_state_dict`: `restore_path` differs, `conf` does not).
SOURCE = """\
import torch


def build(conf):
    return torch.optim.AdamW(conf.parameters, lr=conf.lr, fused=True)


def load(path, override=None):
    unpack(path)
    conf = read(override)
    return build(conf)


def a():
    return load("a.yaml")


def b():
    return load("b.yaml")


def c():
    return load("c.yaml")


def d():
    return load("d.yaml")


def e():
    return load("e.yaml")
"""


def test_a_literal_is_keyed_by_where_it_is_written() -> None:
    one, two = ast.parse("16"), ast.parse("16")
    node, other = one.body[0].value, two.body[0].value  # type: ignore[attr-defined]
    # made again in another context: the same value; the same constant elsewhere: another
    assert memo_key(Lit(16, node, None)) == memo_key(Lit(16, node, None))  # type: ignore[arg-type]
    assert memo_key(Lit(16, node, None)) != memo_key(Lit(16, other, None))  # type: ignore[arg-type]


def test_library_names_classes_and_run_time_values_are_keyed_by_what_they_are() -> None:
    tree = ast.parse("class A: pass\nclass B: pass\nx = f()")
    a, b, assign = tree.body
    assert memo_key(Ext("torch.optim.AdamW")) == memo_key(Ext("torch.optim.AdamW"))
    assert memo_key(Ext("torch.optim.AdamW")) != memo_key(Ext("torch.optim.Adam"))
    assert memo_key(ClsV(a, None)) == memo_key(ClsV(a, None))  # type: ignore[arg-type]
    assert memo_key(ClsV(a, None)) != memo_key(ClsV(b, None))  # type: ignore[arg-type]
    call = assign.value  # type: ignore[attr-defined]
    assert memo_key(Opaque(call, None)) == memo_key(Opaque(call, None))  # type: ignore[arg-type]


def test_equal_arguments_from_other_contexts_read_one_answer(tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, SOURCE)
    functions = {n.name: n for n in summary.tree.body if isinstance(n, ast.FunctionDef)}
    built = []
    for name in "abcde":
        returned = functions[name].body[0].value  # type: ignore[attr-defined]
        ctx: Ctx = evaluator.ctx_of(summary, returned)
        built.append(evaluator.force(evaluator.ev(returned, ctx)))
    # every caller gets the optimizer `build` makes, with its `fused=True` literal
    for values in built:
        (opt,) = [v for v in values if isinstance(v, Opt)]
        assert [v.value for v in opt.fused if isinstance(v, Lit)] == [True]
    # `build` is asked once: its `conf` is one value in all five; `load` once too: its answer
    # never reads `path` (only `unpack(path)`, a statement, writes it), so the other paths
    # read the first one's answer (returns.read_answer; before it, once per path: 5)
    entries = [key for key in evaluator.returns_cache if key[0] == id(functions["build"])]
    assert len(entries) == 1
    assert len([k for k in evaluator.returns_cache if k[0] == id(functions["load"])]) == 1
