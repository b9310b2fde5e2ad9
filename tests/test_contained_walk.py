"""contained_syntax.nodes_on walks with nodes.child_nodes (no expression contexts) instead of
`ast.iter_child_nodes`: the same nodes in the same order, but the shared `Load` / `Store`
objects, which no reader takes for a node (it reads `name.ctx`). Checked on every module of this
repository, for the lines that write several names and for none (the whole walk)."""

from __future__ import annotations

import ast
import bisect
from pathlib import Path

import amp_clipfix
from amp_clipfix.analysis.contained_syntax import nodes_on, word_lines
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


def test_the_same_nodes_in_the_same_order_without_contexts() -> None:
    root = Path(amp_clipfix.__file__).parent
    checked = 0
    for path in sorted(root.rglob("*.py")):
        summary = summarise(root, path, path.read_text("utf-8"))
        assert summary is not None
        for lines in (word_lines(summary, {"node", "self", "found"}), None):
            walked = first_nodes_on(summary.tree, lines)
            expected = [n for n in walked if not isinstance(n, ast.expr_context)]
            got = nodes_on(summary.tree, lines)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
            checked += len(got)
    assert checked > 100_000
