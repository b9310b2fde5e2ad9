"""The syntax contained.py reads: the lines and nodes of a module that write a name, the reads
of a local in a function and the scopes nested in it, annotations (its text tests are in
text_tests.py).
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable
from typing import TYPE_CHECKING

from amp_clipfix.analysis.nodes import child_nodes, walk
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import TextLines
from amp_clipfix.analysis.text_tests import whole_word
from amp_clipfix.analysis.values import Ext, Opaque
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import word_start

if TYPE_CHECKING:
    from amp_clipfix.analysis.summary import Summary

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
STAR_IMPORT = lazy(word_start(b"import") + rb"[ \t\\(\r\n]*\*")


def word_lines(module: Summary, words: set[str]) -> list[int] | None:
    """The lines of the module that hold one of `words` (ASCII identifiers) as a whole word,
    or a byte outside ASCII (an NFKC spelling), sorted; None when the module has no text
    lines (every node may write them)."""
    lines_ = module.lines
    if not isinstance(lines_, TextLines):
        return None
    data, starts = lines_.data, lines_.starts
    offsets = list(module.non_ascii())
    for word in words:
        offsets += [m.start() for m in whole_word(word.encode("ascii")).finditer(data)]
    return sorted({bisect.bisect_right(starts, offset) for offset in offsets})


def nodes_writing(module: Summary, words: set[str]) -> list[ast.AST]:
    """The nodes of the module that may write one of `words`."""
    return nodes_on(module.tree, word_lines(module, words))


def nodes_on(
    root: ast.AST,
    lines: list[int] | None,
    children: Callable[[ast.AST], list[ast.AST]] = child_nodes,
) -> list[ast.AST]:
    """The nodes under `root` (itself included) whose lines hold one of `lines` (all: None),
    found by walking only into the nodes around those lines (a `def` or `class` from its
    decorators; an f-string whole, as Summary.calls_writing does). The expression contexts
    (`Load`, `Store`) are no nodes here, as in nodes.walk: a reader looks at `name.ctx`.
    `children`: each node's (bodies.peeked_child_nodes for a reader that keeps no node)."""
    if lines is None:
        return list(walk(root))
    found: list[ast.AST] = []
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.JoinedStr):
            found.extend(n for n in walk(node) if n is not node)
            continue
        for child in children(node):
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


def annotation(node: ast.expr, parent_of: Callable[[ast.AST], ast.AST | None]) -> bool:
    """`node` is (inside) a parameter's, a return's or an assignment's annotation."""
    child: ast.AST = node
    parent = parent_of(child)
    while isinstance(parent, (ast.Subscript, ast.Tuple, ast.BinOp, ast.List)):
        child, parent = parent, parent_of(parent)
    if isinstance(parent, ast.arg):
        return parent.annotation is child
    if isinstance(parent, FUNCTIONS):
        return parent.returns is child
    if isinstance(parent, ast.AnnAssign):
        return parent.annotation is child
    return False


def bound_in(cls: ast.ClassDef) -> set[str]:
    """The names a class body binds itself (methods, class attributes)."""
    found: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            found.add(statement.name)
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    found.add(node.id)
    return found


def reads_of(function: ast.AST, name: str, nodes: list[ast.AST]) -> list[ast.Name]:
    """The reads of `name` among `nodes` (nodes_on `function`) in the body of `function` and of
    the scopes nested in it, but those of a nested function or lambda that has a parameter of
    that name (its own): their decorators and defaults are read where they are written."""
    skipped: set[int] = set()
    for node in nodes:
        if (
            node is not function
            and isinstance(node, (*FUNCTIONS, ast.Lambda))
            and name in {a.arg for a in all_params(node.args)}
        ):
            skipped.update(id(n) for n in own_scope(node))
    skipped.update(id(n) for n in own_scope(function, parameters=True))
    return [
        n
        for n in nodes
        if isinstance(n, ast.Name)
        and n.id == name
        and isinstance(n.ctx, ast.Load)
        and id(n) not in skipped
    ]


def own_scope(function: ast.AST, parameters: bool = False) -> list[ast.AST]:
    """What of a function is read in its own scope: its body (for a nested function that
    binds the name itself), or (`parameters`) its signature, decorators and annotations,
    which the outer scope reads (for the function being checked: not its reads)."""
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    if parameters:
        heads = [*getattr(function, "decorator_list", ()), *args.defaults]
        heads += [d for d in args.kw_defaults if d is not None]
        heads += [a.annotation for a in all_params(args) if a.annotation is not None]
        returns = getattr(function, "returns", None)
        return [n for head in [*heads, *([returns] if returns else [])] for n in ast.walk(head)]
    body = function.body  # type: ignore[attr-defined]
    return [n for part in (body if isinstance(body, list) else [body]) for n in ast.walk(part)]


def is_super(node: ast.AST) -> bool:
    """A call `super(...)`: the evaluator's `self` of the class it is written in."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def library_value(value: object, node: ast.AST) -> bool:
    """The evaluator's value of `node` is the library's: a library name, or decided at run time
    at `node` itself (a library attribute of an object, a library call's result)."""
    return isinstance(value, Ext) or (isinstance(value, Opaque) and value.node is node)
