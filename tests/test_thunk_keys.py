"""returns.thunk_key is made once per expression, context and depth, and what it looked at is
noted again at every use: the same answers, the same parameters read, as making it each time
(peft's wrapper chains asked 779 keys a million times)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module

from amp_clipfix.analysis.returns import CallReturns
from amp_clipfix.analysis.values import Lit, Opt

# each level passes an attribute of its parameter on: the key of `build`'s argument is the key
# of `c.inner` in `l3`'s context, made of the key of `c.inner` in `l2`'s, and so on down; `l3`
# calls `build` twice, each key made of the same ones below
SOURCE = """\
import torch


def build(c):
    return torch.optim.AdamW(c.parameters, lr=c.lr, fused=True)


def l3(c):
    return build(c.inner) or build(c.inner)


def l2(c):
    return l3(c.inner)


def l1(c):
    return l2(c.inner)


def a():
    return l1(read("a"))


def b():
    return l1(read("b"))


def c():
    return l1(read("c"))
"""


def evaluated(tmp_path: Path) -> tuple[list[list[bool]], list[int], list[list[str]], int, int]:
    """Each caller's optimizer `fused` literals, the returns entries per function, the
    parameters each entry's answer read, and how many keys were asked and made."""
    asked = made = 0
    thunk_key, made_key = CallReturns.thunk_key, CallReturns.made_thunk_key

    def counted_ask(self, item, depth):  # noqa: ANN001, ANN202
        nonlocal asked
        asked += 1
        return thunk_key(self, item, depth)

    def counted_make(self, item, depth):  # noqa: ANN001, ANN202
        nonlocal made
        made += 1
        return made_key(self, item, depth)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(CallReturns, "thunk_key", counted_ask)
        patched.setattr(CallReturns, "made_thunk_key", counted_make)
        evaluator, summary = one_module(tmp_path, SOURCE)
        functions = [n for n in summary.tree.body if isinstance(n, ast.FunctionDef)]
        fused = []
        for function in functions[4:]:  # a(), b(), c()
            returned = function.body[0].value  # type: ignore[attr-defined]
            values = evaluator.force(evaluator.ev(returned, evaluator.ctx_of(summary, returned)))
            (opt,) = [v for v in values if isinstance(v, Opt)]
            fused.append([v.value for v in opt.fused if isinstance(v, Lit)])
    entries = [sum(1 for key in evaluator.returns_cache if key[0] == id(f)) for f in functions]
    reads = sorted(sorted(read) for read in evaluator.returns_reads.values())
    return fused, entries, reads, asked, made


def test_a_key_made_once_answers_as_one_made_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "once").mkdir()
    (tmp_path / "each").mkdir()
    once = evaluated(tmp_path / "once")
    with monkeypatch.context() as patched:

        def each_time(self, item, depth):  # noqa: ANN001, ANN202
            return CallReturns.made_thunk_key(self, item, depth)

        patched.setattr(CallReturns, "thunk_key", each_time)
        patched.setattr(CallReturns, "made_thunk_key", CallReturns.made_thunk_key)
        each = evaluated(tmp_path / "each")
    assert once[:3] == each[:3]
    assert once[0] == [[True]] * 3
    asked, made = once[3], once[4]
    assert 0 < made < asked  # asked again for every followed call, made once
