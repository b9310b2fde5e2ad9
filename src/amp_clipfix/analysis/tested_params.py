"""Functions whose parameter of a given name only decides branches (fused_origins.py: a `fused=`
keyword passed to one is no fused origin)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from amp_clipfix.analysis.nodes import walk

# Names that may read or rebind a function's locals or a module's names by their text.
BY_TEXT = frozenset({"locals", "vars", "globals", "eval", "exec", "__import__", "setattr"})


def tested_only(tree: ast.Module, param: str) -> set[str]:
    """The module's functions whose parameter `param` is only tested: each is defined once, at
    the module's top, undecorated, its name bound nowhere else in the module (so a call of that
    name here calls it, as the evaluator resolves it); the parameter is no positional-only one,
    and every use of that name in the function is the test of an `if`, a conditional expression
    or a `while` (never stored, passed, returned, negated, nor read by `locals()`). None when
    the module names a builtin that reads or rebinds names by their text, or imports `*`. A
    value passed as its `fused=` keyword then decides a branch only: it is never any
    optimizer's `fused` (what a branch builds is judged by its own origins, as for a parameter
    of any other name), so the keyword is no origin. ColossalAI's
    `_build_gpt_pipeline_1d(fused=...)` picks a model class with it."""
    defined: dict[str, list[ast.AST]] = {}
    for node in walk(tree):
        for name in bound_names(node):
            defined.setdefault(name, []).append(node)
        if isinstance(node, ast.Name) and node.id in BY_TEXT:
            return set()
    if "*" in defined:
        return set()  # `from m import *` may rebind any name
    found: set[str] = set()
    for statement in tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if statement.decorator_list or defined.get(statement.name) != [statement]:
            continue
        args = statement.args
        if not any(a.arg == param for a in (*args.args, *args.kwonlyargs)):
            continue
        tests: set[int] = set()
        uses: list[ast.Name] = []
        for node in walk(statement):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                tests.add(id(node.test))
            elif isinstance(node, ast.Name) and node.id == param:
                uses.append(node)
        if all(isinstance(use.ctx, ast.Load) and id(use) in tests for use in uses):
            found.add(statement.name)
    return found


def bound_names(node: ast.AST) -> Iterable[str]:
    """The names a node binds or declares anywhere in a module (a parameter's too)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.alias):
        yield (node.asname or node.name).split(".")[0]
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest
