"""Walking an `ast` tree in ast's own orders, about twice as fast as `ast.walk`; the names an
assignment target binds.

`ast.walk` and `ast.iter_child_nodes` go through two generators per node and visit the
`Load`/`Store` context object of every name; on the trees a run reads that is most of the time
spent outside the parser. These give the same nodes in the same order, without the contexts
(no reader looks at a context as a node: it reads `name.ctx`).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

AST, CONTEXT = ast.AST, ast.expr_context
# Names and constants, most of a tree's leaves, hold no node but their context: their fields
# are not even looked at. `ctx` (always a context) is left out of every node type's fields.
LEAVES = (ast.Name, ast.Constant)
FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold child nodes, worked out once per type."""
    fields = FIELDS.get(kind)
    if fields is None:
        leaf = kind in LEAVES
        fields = FIELDS[kind] = tuple(f for f in kind._fields if not leaf and f != "ctx")  # type: ignore[attr-defined]
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))` without expression contexts."""
    children: list[ast.AST] = []
    fields = FIELDS.get(type(node))
    if fields is None:
        fields = node_fields(type(node))
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, AST):
                    children.append(item)
        elif isinstance(value, AST) and not isinstance(value, CONTEXT):
            children.append(value)
    return children


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)`: the node and everything below it, breadth first."""
    todo = deque([node])
    while todo:
        current = todo.popleft()
        todo.extend(child_nodes(current))
        yield current


def target_names(target: ast.expr) -> list[str]:
    """The plain names a target binds (`a, *b = ...`); `x.y` and `x[k]` bind none."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def literal_text(value: object) -> str:
    """`str(value)`, also for an integer past Python's limit on converting integers to
    decimal text (4,300 digits, `sys.get_int_max_str_digits`: a `0x...` literal of the user's
    code may hold one): written in hex, which has no limit, and equal to no short literal a
    rule compares with."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:
            return hex(value)
    return str(value)
