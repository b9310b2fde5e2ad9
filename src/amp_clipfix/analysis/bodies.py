"""Function bodies that nothing has read are let go, and parsed again when first read.

The `ast` trees of the modules the evaluator loads are most of a run's memory (NeMo: 222 of
350 MB at the end of the rules), and most of a tree is function bodies. A search reads a few
functions of each module it loads; the rest of the module is never looked at, yet every
summary keeps its whole tree to the end of the run (the evaluator's values and memos pin the
trees, so a tree cannot be dropped and parsed again: a second parse gives new nodes, and the
memos and values compare nodes by identity).

A body nothing has read, though, has handed out no node: nothing can hold one of its nodes,
so dropping it and parsing it again later gives nodes nobody can tell from the first ones
(the same bytes give the same tree). So:

- `note_unread(tree, lines)`: the module-level and class-level functions of a tree the
  summary parsed itself are noted as unread (`PENDING`, by node).
- Reading a `FunctionDef`'s or `AsyncFunctionDef`'s `body` (a property on the two `ast`
  classes: the attribute, `getattr`, `ast.walk`, `compile`) takes it off that list for good.
- `let_go()`, at the points where a stage of the analysis begins (each rule), puts a
  placeholder (`Unread`) in place of every body still on the list: the module's lines it
  can be parsed again from. The node's attribute dict keeps its size (a key replaced, not
  added).
- Reading a let-go body parses the function's own lines again (its decorators' first line
  to its last, under an `if 1:` when it is indented, at its own line numbers) and checks
  that the function found is the one noted (name and positions); else the whole module is
  parsed again and the function found by its position. The body then stays.

Trees the collection's readers parsed (their sites hold nodes of bodies this process never
read through the attribute) and trees made any other way are never noted.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

Function = ast.FunctionDef | ast.AsyncFunctionDef
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

# The functions whose bodies nothing has read since their tree was parsed, by node id (the
# node is held, so its id is its own), with the module's UTF-8 lines.
PENDING: dict[int, tuple[Function, Sequence[bytes]]] = {}


class Unread:
    """A body let go: the module's UTF-8 lines it is parsed again from."""

    __slots__ = ("lines",)

    def __init__(self, lines: Sequence[bytes]) -> None:
        self.lines = lines


def _get_body(node: Function) -> list[ast.stmt]:
    try:
        body = node.__dict__["body"]
    except KeyError:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute 'body'") from None
    if type(body) is Unread:
        return parse_again(node, body.lines)
    if PENDING:
        PENDING.pop(id(node), None)
    return body


def _set_body(node: Function, body: list[ast.stmt]) -> None:
    PENDING.pop(id(node), None)  # a body given by code is not the text's: never let go
    node.__dict__["body"] = body


def _del_body(node: Function) -> None:
    PENDING.pop(id(node), None)
    del node.__dict__["body"]


for _kind in FUNCTIONS:
    _kind.body = property(_get_body, _set_body, _del_body)  # type: ignore[assignment]


def note_unread(tree: ast.Module, lines: Sequence[bytes]) -> None:
    """Note the functions of `tree` (module level, in classes, in `if` / `try` blocks) as
    unread. Only for a tree just parsed from `lines` whose nodes no one holds yet."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        statement = todo.pop()
        if isinstance(statement, FUNCTIONS):
            PENDING[id(statement)] = (statement, lines)
        elif isinstance(statement, ast.ClassDef):
            todo.extend(statement.body)
        elif isinstance(statement, (ast.If, ast.Try)):
            todo.extend(statement.body)
            todo.extend(statement.orelse)
            if isinstance(statement, ast.Try):
                todo.extend(statement.finalbody)
                for handler in statement.handlers:
                    todo.extend(handler.body)


def let_go() -> int:
    """Let go of every body still unread; returns how many."""
    count = len(PENDING)
    for node, lines in PENDING.values():
        node.__dict__["body"] = Unread(lines)
    PENDING.clear()
    return count


def forget() -> None:
    """Keep the unread bodies as they are and let go of the list (and of its hold on the
    trees): a project's analysis is over."""
    PENDING.clear()


def parse_again(node: Function, lines: Sequence[bytes]) -> list[ast.stmt]:
    """The body of `node` parsed again from the module's lines, kept from now on."""
    found = function_from_lines(node, lines) or function_from_module(node, lines)
    if found is None:  # the same bytes give the same tree: never, unless the lines changed
        raise RuntimeError(f"function {node.name!r} at line {node.lineno} not found again")
    body = found.__dict__["body"]
    node.__dict__["body"] = body
    return body


def first_line(node: Function) -> int:
    return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def same_function(node: Function, other: ast.AST) -> bool:
    return (
        type(other) is type(node)
        and other.name == node.name
        and (other.lineno, other.col_offset) == (node.lineno, node.col_offset)
        and (other.end_lineno, other.end_col_offset) == (node.end_lineno, node.end_col_offset)
    )


def function_from_lines(node: Function, lines: Sequence[bytes]) -> Function | None:
    """The function parsed from its own lines at their line numbers, or None."""
    first = first_line(node)
    if node.end_lineno is None or first < 1:
        return None
    segment = b"\n".join(lines[first - 1 : node.end_lineno]).decode("utf-8")
    indented = node.col_offset > 0
    if indented and first < 2:
        return None
    head = "\n" * (first - 2) + "if 1:\n" if indented else "\n" * (first - 1)
    try:
        module = ast.parse(head + segment + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    block = module.body[0].body if indented and isinstance(module.body[0], ast.If) else module.body
    if len(block) != 1 or not same_function(node, block[0]):
        return None
    return block[0]  # type: ignore[return-value]


def function_from_module(node: Function, lines: Sequence[bytes]) -> Function | None:
    """The function found by its position in the whole module parsed again."""
    from amp_clipfix.analysis.parse import parse_module

    try:
        module = parse_module(b"\n".join(lines).decode("utf-8"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    todo: list[ast.AST] = [module]
    while todo:
        current = todo.pop()
        if same_function(node, current):
            return current  # type: ignore[return-value]
        todo.extend(
            child
            for child in ast.iter_child_nodes(current)
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))
        )
    return None
