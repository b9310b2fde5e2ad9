"""A function's own names read from its statements alone (analysis/own_names.py): the same
bindings, in the same order, as a walk of all its nodes, whenever its module writes no `:=`;
with a `:=` anywhere in the module's text, every node is read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module

import amp_clipfix
from amp_clipfix.analysis.shapes import BLOCK_NODES, function_body_nodes, own_statements
from amp_clipfix.analysis.values import Lit, Opaque

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

# Every kind of block a binding may sit in: nested blocks, `with` items, `except` clauses,
# `case`s, loops, imports, nested functions and classes (their insides are not the function's).
BLOCKS = """\
import torch

fused = False


def build(model, flag):
    import functools as tools
    with torch.no_grad() as grad, open("x") as (a, b):
        fused = flag
    try:
        pass
    except ValueError as error:
        fused = not flag
    else:
        settle = 1
    finally:
        done = True
    match flag:
        case 1:
            fused = True
        case _:
            other = 2
    for index, item in enumerate([]):
        while index:
            if item:
                fused = item
    async def inner():
        fused = "inner"
        async with grad as g:
            pass
        async for x in g:
            pass
    class Holder:
        fused = "class"
    lam = lambda fused=None: fused
    fused += 1
    total: int = 0
    return torch.optim.AdamW(model.parameters(), fused=fused)
"""

WALRUS = """\
import torch

fused = False


def build(model):
    if (fused := True):
        pass
    return torch.optim.AdamW(model.parameters(), fused=fused)
"""


def functions(tree: ast.AST) -> list[ast.AST]:
    return [node for node in ast.walk(tree) if isinstance(node, FUNCTIONS)]


def package_trees() -> list[ast.AST]:
    root = Path(amp_clipfix.__file__).parent
    return [ast.parse(path.read_text()) for path in sorted(root.rglob("*.py"))]


def test_own_statements_are_the_walks_statements_in_its_order() -> None:
    trees = [ast.parse(BLOCKS), ast.parse(WALRUS), *package_trees()]
    checked = 0
    for tree in trees:
        for function in functions(tree):
            whole = [n for n in function_body_nodes(function) if isinstance(n, BLOCK_NODES)]
            own = own_statements(function)
            assert len(own) == len(whole) and all(a is b for a, b in zip(own, whole))
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize("source", [BLOCKS, WALRUS], ids=["blocks", "walrus"])
def test_the_statements_bind_what_the_whole_walk_binds(source: str, tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, source)
    for function in functions(summary.tree):
        fast = evaluator.local_bindings(function, summary)
        evaluator.locals_cache.clear()
        whole = evaluator.local_bindings(function)
        evaluator.locals_cache.clear()
        assert list(fast) == list(whole)
        for name in fast:
            assert [id(n) for n in fast[name]] == [id(n) for n in whole[name]]
    build = next(f for f in summary.tree.body if isinstance(f, ast.FunctionDef))
    names = set(evaluator.local_bindings(build, summary))
    if source is BLOCKS:
        expected = {"tools", "grad", "a", "b", "fused", "settle", "done", "other", "index"}
        assert expected | {"item", "inner", "Holder", "lam", "total"} == names
    else:
        assert names == {"fused"}  # bound by `:=` only, an expression


def fused_values(tmp_path: Path, source: str) -> list[object]:
    evaluator, summary = one_module(tmp_path, source)
    build = next(f for f in summary.tree.body if isinstance(f, ast.FunctionDef))
    call = build.body[-1].value  # type: ignore[attr-defined]
    value = next(k.value for k in call.keywords if k.arg == "fused")
    return evaluator.force(evaluator.ev(value, evaluator.ctx_of(summary, value)))


def test_a_name_bound_by_walrus_is_the_functions_own(tmp_path: Path) -> None:
    """Read from the statements alone, `fused` would be the module's False; it is the
    function's own (a value the evaluator does not follow: decided at run time)."""
    values = fused_values(tmp_path, WALRUS)
    assert values and all(isinstance(v, Opaque) for v in values)


def test_a_walrus_written_anywhere_in_the_module_reads_every_node(tmp_path: Path) -> None:
    """A `:=` in a string only: the whole walk is read, with the same answer."""
    (tmp_path / "said").mkdir()
    (tmp_path / "plain").mkdir()
    source = BLOCKS.replace("fused = False", 'fused = False\nNOTE = "a := b"')
    said, summary = one_module(tmp_path / "said", source)
    assert said.writes_walrus(summary)
    plain, summary = one_module(tmp_path / "plain", BLOCKS)
    assert not plain.writes_walrus(summary)
    for folder, text in (("said", source), ("plain", BLOCKS)):
        values = fused_values(tmp_path / folder, text)
        lits = {str(v.value) for v in values if isinstance(v, Lit)}
        assert "True" in lits and not lits & {"False", "inner", "class"}
