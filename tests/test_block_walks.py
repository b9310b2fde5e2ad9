"""The walks over a parsed tree, made cheaper (session 20, branch `parse`), against their first
spellings: a block's statements found on some lines by bisection (`nodes.block_on`), every call
listed without looking at positions (`nodes.every_call`), a function's own statements read from
the fields that hold them (`shapes.own_blocks`), the way down to a node by positions
(`Summary.find_down`), and a name's calls and the calls passing it from one walk of the lines
writing it (`Summary.calls_and_passing`). Each must give the same nodes in the same order.
"""

from __future__ import annotations

import ast
import random
from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path

import pytest

from amp_clipfix.analysis import summary as summary_module
from amp_clipfix.analysis.nodes import (
    AST,
    CONTEXT,
    SHORT_BLOCK,
    block_on,
    blocks_of,
    calls_in,
    child_nodes,
    node_fields,
    walk,
)
from amp_clipfix.analysis.shapes import BLOCK_NODES, SCOPES, own_statements
from amp_clipfix.analysis.summary import Summary, called_name, summarise

ROOT = Path(__file__).resolve().parent.parent

# Long blocks (module, class and function bodies past SHORT_BLOCK), decorators above their
# `def` and `class`, statements sharing a line, `try` clauses, `match` cases, f-strings.
BLOCKY = (
    "import os\n"
    + "".join(f"a{n} = f({n}); b{n} = g(a{n})\n" for n in range(12))
    + "@deco(\n    h(1),\n)\nclass C(Base(k=2)):\n"
    + "".join(
        f"    @wrap(w{n}())\n    def m{n}(self, x=d({n})):\n"
        f"        y = self.m{n + 1}(x); z = run(y)\n"
        f"        return f'{{fit(y)}} {{z}}'\n\n"
        for n in range(12)
    )
    + "try:\n"
    + "".join(f"    t{n}({n})\n" for n in range(10))
    + "except E(1):\n    handle()\nexcept F:\n    other(2)\n"
    + "else:\n    done()\nfinally:\n    end()\n"
    + "match p(1):\n    case {'k': v}:\n        use(v)\n    case _:\n        use(0)\n"
    + "".join(f"def top{n}():\n    return C().m{n}(top{n + 1})\n" for n in range(12))
)


def spelled_calls(tree: ast.AST, lines: Sequence[int]) -> list[ast.Call]:
    """`calls_in(tree, lines)` as first written: every child's lines tested one by one."""
    found: list[ast.Call] = []
    todo: list[tuple[ast.AST, bool]] = [(tree, True)]
    for node, pruned in todo:
        if type(node) is ast.Call:
            found.append(node)  # type: ignore[arg-type]
        inner = pruned and type(node) is not ast.JoinedStr
        for field in node_fields(type(node)):
            value = getattr(node, field, None)
            for child in value if type(value) is list else (value,):
                if not isinstance(child, AST) or isinstance(child, CONTEXT):
                    continue
                start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
                if inner and start is not None and end is not None:
                    decorators = getattr(child, "decorator_list", None)
                    if decorators:
                        start = min(start, *(d.lineno for d in decorators))
                    index = bisect_left(lines, start)
                    if index == len(lines) or lines[index] > end:
                        continue
                todo.append((child, inner))
    return found


def spelled_own_statements(function: ast.AST) -> list[ast.AST]:
    found: list[ast.AST] = []
    stack = [child for child in child_nodes(function) if isinstance(child, BLOCK_NODES)]
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, SCOPES):
            stack.extend(child for child in child_nodes(node) if isinstance(child, BLOCK_NODES))
    return found


def python_texts() -> list[tuple[str, str]]:
    found = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py"))
    texts = [("blocky.py", BLOCKY)]
    for path in found:
        if "expected" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        texts.append((path.name, text))
    return texts


def same(found: list[ast.Call], expected: list[ast.Call]) -> bool:
    return len(found) == len(expected) and all(a is b for a, b in zip(found, expected))


def test_the_blocky_module_has_long_blocks() -> None:
    tree = ast.parse(BLOCKY)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert len(tree.body) > SHORT_BLOCK and len(classes[0].body) > SHORT_BLOCK


@pytest.mark.parametrize("chunk", range(3))
def test_calls_on_lines_are_the_first_spellings(chunk: int) -> None:
    """Random sets of lines (none, one, a few, many; past the ends too) on every module here."""
    chosen = random.Random(chunk)
    for name, text in python_texts()[chunk::3]:
        tree = ast.parse(text)
        count = text.count("\n") + 2
        for size in (0, 1, 1, 2, 3, 5, 8, 20, 60):
            lines = sorted({chosen.randint(0, count) for _ in range(size)})
            assert same(calls_in(tree, lines), spelled_calls(tree, lines)), (name, lines)
        every = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        assert same(calls_in(tree), every), name


def test_a_block_on_each_of_its_lines() -> None:
    """Each line alone, and each pair of neighbours, of the blocky module's long blocks."""
    tree = ast.parse(BLOCKY)
    blocks = [tree.body, *(n.body for n in walk(tree) if isinstance(n, ast.ClassDef))]
    last = BLOCKY.count("\n") + 1
    for block in blocks:
        for line in range(last + 1):
            for lines in ([line], [line, line + 1], [line, line + 3]):
                expected = [
                    s
                    for s in block
                    if any(
                        min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))])
                        <= at
                        <= (s.end_lineno or s.lineno)
                        for at in lines
                    )
                ]
                assert block_on(block, lines, len(lines)) == expected, lines


def test_own_statements_are_the_first_spellings() -> None:
    for name, text in python_texts()[::2]:
        tree = ast.parse(text)
        scopes = [tree, *(node for node in walk(tree) if isinstance(node, SCOPES))]
        for scope in scopes:
            assert same(own_statements(scope), spelled_own_statements(scope)), name  # type: ignore[arg-type]


def summary_of(text: str) -> Summary:
    found = summarise(Path("/project"), Path("/project/module.py"), text)
    assert found is not None
    return found


def test_every_node_finds_its_parent() -> None:
    """find_down goes down by positions (decorators above their `def`, `a; b` on one line)."""
    summary = summary_of(BLOCKY)
    parents = {child: node for node in walk(summary.tree) for child in child_nodes(node)}
    for child, parent in parents.items():
        assert summary.parent(child) is parent


def test_a_names_calls_and_passing_come_from_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[object] = []

    def counted(tree: ast.AST, *args: object, **kwargs: object) -> list[ast.Call]:
        walks.append(tree)
        return calls_in(tree, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summary_module, "calls_in", counted)
    summary = summary_of(BLOCKY)
    every = [node for node in ast.walk(summary.tree) if isinstance(node, ast.Call)]
    for name in ("top3", "m4", "fit", "use"):
        walks.clear()
        called = [call for call in every if called_name(call.func) == name]
        assert summary.calls(name) == sorted(called, key=lambda c: (c.lineno, c.col_offset))
        arguments = lambda c: [*c.args, *(k.value for k in c.keywords)]  # noqa: E731
        passing = [c for c in every if name in {called_name(a) for a in arguments(c)}]
        assert summary.passing(name) == passing
        assert len(walks) == 1, name


def test_a_listed_modules_calls_stay_in_walk_order() -> None:
    """Once every call is listed, a name's calls come from an index of them by name, sorted
    apart: the module's list keeps `ast.walk`'s order even when every call has that name."""
    summary = summary_of("x = f(f(1))\nf(2)\n")
    listed = summary.walked_calls()
    order = [(call.lineno, call.col_offset) for call in listed]
    assert order == [(1, 4), (2, 0), (1, 6)]
    assert [(c.lineno, c.col_offset) for c in summary.calls("f")] == [(1, 4), (1, 6), (2, 0)]
    assert summary.walked_calls() is listed
    assert [(call.lineno, call.col_offset) for call in listed] == order
    assert summary.passing("f") == [] and summary.calls("g") == []


def test_the_statements_walk_is_ast_walks() -> None:
    """Every statement in `ast.walk`'s order; with a word, the same less the statements of the
    functions whose lines write it no more than allowed (the first spelling, every field)."""
    for name, text in python_texts()[1::2]:
        summary = summary_of(text)
        every = [node for node in ast.walk(summary.tree) if isinstance(node, ast.stmt)]
        assert same(summary.statements_walk(), every), name  # type: ignore[arg-type]
        for word, own in ((b"class", 0), (b"return", 1)):
            assert same(
                summary.statements_walk(word, own),  # type: ignore[arg-type]
                spelled_statements(summary, word, own),  # type: ignore[arg-type]
            ), name


def spelled_statements(summary: Summary, word: bytes, own: int) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    todo: list[ast.AST] = [summary.tree]
    for node in todo:
        if isinstance(node, ast.stmt):
            found.append(node)
            functions = (ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(node, functions) and summary.count(word, node) <= own:
                continue
        for field in node_fields(type(node)):
            value = getattr(node, field, None)
            if type(value) is list:
                kinds = (ast.stmt, ast.excepthandler, ast.match_case)
                todo.extend(item for item in value if isinstance(item, kinds))
    return found


def test_the_blocks_of_every_statement_are_the_first_spellings() -> None:
    for name, text in python_texts()[::2]:
        for statement in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)):
            found = [
                block
                for field in ("body", "orelse", "finalbody")
                if isinstance(block := getattr(statement, field, None), list) and block
            ]
            clauses = [*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())]
            found += [clause.body for clause in clauses]
            assert blocks_of(statement) == found, (name, statement.lineno)
