"""The code the resolution quotes in a site's detail (`resolve_base.segment`) is what
`ast.get_source_segment` gives, from lines split once per resolution."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.resolve_base import segment
from amp_clipfix.analysis.summary import summarise

PIECES = [
    "x = f(a,\n      b)\n",
    "y = g(fused=flag)\r\n",
    "z = 'é' + h(  1 )\n",
    "w = [1,\r\n 2]\r\n",
    "def k(p):\n    return AdamW(p, fused=(\n        True))\n",
    "s = '''a\rb'''\n",
    "t = 1",
    "# a comment with ünïcode\n",
    "u = 𝔣(2)\n",
]


def nodes_of(tree: ast.Module) -> list[ast.AST]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.expr, ast.stmt))]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6))
def test_segment_is_the_stdlib_segment(pieces: list[str]) -> None:
    text = "".join(piece if piece.endswith("\n") else piece + "\n" for piece in pieces[:-1])
    text += pieces[-1]
    summary = summarise(Path("/p"), Path("/p/m.py"), text)
    assert summary is not None
    lines: dict[Path, list[str]] = {}
    nodes = nodes_of(summary.tree)
    for node in nodes:
        expected = ast.get_source_segment(summary.source(), node) or "..."
        assert segment(summary, node, lines) == expected
    assert list(lines) == ([summary.path] if nodes else [])  # split once, kept


@pytest.mark.parametrize("text", ["a = 1\r\nb = f(\r\n  2)\r\n", "c = g(1)", "d = 'x\\\r\n'\n"])
def test_segment_of_each_line_ending(text: str) -> None:
    summary = summarise(Path("/p"), Path("/p/m.py"), text)
    assert summary is not None
    lines: dict[Path, list[str]] = {}
    for node in nodes_of(summary.tree):
        assert segment(summary, node, lines) == (
            ast.get_source_segment(summary.source(), node) or "..."
        )
