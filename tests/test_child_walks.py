"""contained_syntax.nodes_on and order.own_calls walk with nodes.child_nodes (no expression
contexts) instead of `ast.iter_child_nodes`: the same nodes in the same order, but the shared
`Load` / `Store` objects, which no reader takes for a node (it reads `name.ctx`) and which hold
no call. Checked on every module of this repository: nodes_on for the lines that write several
names and for none (the whole walk), own_calls for every statement."""

from __future__ import annotations

import ast
import bisect
from pathlib import Path

import amp_clipfix
from amp_clipfix.analysis.contained_syntax import nodes_on, word_lines
from amp_clipfix.analysis.order import FUNCTIONS, own_calls
from amp_clipfix.analysis.summary import summarise


def first_nodes_on(root: ast.AST, lines: list[int] | None) -> list[ast.AST]:
    """nodes_on as first written, with `ast.iter_child_nodes` and `ast.walk`."""
    if lines is None:
        return list(ast.walk(root))
    found: list[ast.AST] = []
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.JoinedStr):
            found.extend(n for n in ast.walk(node) if n is not node)
            continue
        for child in ast.iter_child_nodes(node):
            start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if start is not None and end is not None:
                decorators = getattr(child, "decorator_list", None)
                if decorators:
                    start = min(start, *(d.lineno for d in decorators))
                index = bisect.bisect_left(lines, start)
                if index == len(lines) or lines[index] > end:
                    continue
            stack.append(child)
    return found


def first_own_calls(statement: ast.stmt) -> list[ast.Call]:
    """order.own_calls as first written, with `ast.iter_child_nodes`."""
    found: list[ast.Call] = []
    stack: list[ast.AST] = [statement]
    own = {
        id(s)
        for f in ("body", "orelse", "finalbody", "handlers", "cases")
        for s in getattr(statement, f, None) or ()
    }
    while stack:
        node = stack.pop()
        if id(node) in own or isinstance(node, (ast.Lambda, *FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))


def modules() -> list[tuple[Path, str]]:
    root = Path(amp_clipfix.__file__).parent
    return [(path, path.read_text("utf-8")) for path in sorted(root.rglob("*.py"))]


def test_own_calls_are_the_same_calls_in_the_same_order() -> None:
    checked = 0
    for _, text in modules():
        for statement in ast.walk(ast.parse(text)):
            if isinstance(statement, ast.stmt):
                got, expected = own_calls(statement), first_own_calls(statement)
                assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
                checked += len(got)
    assert checked > 10_000


def test_the_same_nodes_in_the_same_order_without_contexts() -> None:
    root = Path(amp_clipfix.__file__).parent
    checked = 0
    for path, text in modules():
        summary = summarise(root, path, text)
        assert summary is not None
        for lines in (word_lines(summary, {"node", "self", "found"}), None):
            walked = first_nodes_on(summary.tree, lines)
            expected = [n for n in walked if not isinstance(n, ast.expr_context)]
            got = nodes_on(summary.tree, lines)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
            checked += len(got)
    assert checked > 100_000
