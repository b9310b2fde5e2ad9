"""Walking an `ast` tree in ast's own orders, about twice as fast as `ast.walk`; the names an
assignment target binds.

`ast.walk` and `ast.iter_child_nodes` go through two generators per node and visit the
`Load`/`Store` context object of every name; on the trees a run reads that is most of the time
spent outside the parser. These give the same nodes in the same order, without the contexts
(no reader looks at a context as a node: it reads `name.ctx`).
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Sequence

AST, CONTEXT = ast.AST, ast.expr_context
# Names and constants, most of a tree's leaves, hold no node but their context: their fields
# are not even looked at. `ctx` (always a context) is left out of every node type's fields.
LEAVES = (ast.Name, ast.Constant)
FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold child nodes, worked out once per type: not
    `ctx`, nor a field `ast` declares a name, a string, a number or a constant."""
    fields = FIELDS.get(kind)
    if fields is None:
        leaf, plain = kind in LEAVES, plain_fields(kind)
        fields = FIELDS[kind] = tuple(
            f
            for f in kind._fields  # type: ignore[attr-defined]
            if not leaf and f != "ctx" and f not in plain
        )
    return fields


# The types of `ast`'s signatures whose values are never nodes.
PLAIN_TYPES = frozenset({"identifier", "string", "int", "constant"})


def plain_fields(kind: type) -> set[str]:
    """The fields whose `ast` signature (the docstring of the `ast` class a node type is or
    derives from: `FunctionDef(identifier name, arguments args, ...)`) says they hold no node;
    none when it cannot be read (such a field is then looked at, and holds no node)."""
    ast_class = next((base for base in kind.__mro__ if base.__module__ == "ast"), None)
    doc = (getattr(ast_class, "__doc__", None) or "").split("\n", 1)[0]
    opened, closed = doc.find("("), doc.rfind(")")
    plain: set[str] = set()
    if 0 < opened < closed:
        for declared in doc[opened + 1 : closed].split(","):
            words = declared.split()
            if len(words) == 2 and words[0].rstrip("?*") in PLAIN_TYPES:
                plain.add(words[1])
    return plain


# The fields that can hold a statement, an `except` clause, a `case` or a `with` item, always
# as a list (an expression's `body` / `orelse` is a single node, or a list of expressions).
STATEMENT_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases", "items"})
BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


def block_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold statements (or their clauses, or `with`
    items), in `_fields`' order: a walk over statements reads no other."""
    fields = BLOCK_FIELDS.get(kind)
    if fields is None:
        fields = BLOCK_FIELDS[kind] = tuple(f for f in node_fields(kind) if f in STATEMENT_FIELDS)
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


def calls_in(
    tree: ast.AST,
    lines: Sequence[int] | None = None,
    owners: list[ast.AST | None] | None = None,
    unread: Callable[[ast.AST], list[ast.stmt] | None] | None = None,
) -> list[ast.Call]:
    """The calls of `[n for n in walk(tree) if isinstance(n, ast.Call)]`, in that order, from
    one loop (no generator, no list per node). With `lines` (sorted), those of them that lie
    on one of `lines` or in a node without a position: the walk goes only into the nodes
    whose lines hold one of `lines`. A call whose callee or argument is written on one of
    them is among these, as every node around it spans that line too: a `def`'s or
    `class`'s decorators are counted from their own first line, and what is inside an
    f-string (whose inner positions Python before 3.12 may misplace) is walked whole, never
    by its positions.

    With `owners` and `unread` (and `lines`), the body of a function nothing has read is
    looked at without reading it for good (`unread`: bodies.unread_body), and `owners` gets,
    for each call found, that function (None for a call in no such body): the caller reads
    for good the functions of the calls it keeps (bodies.kept_calls), and the others' bodies
    are still let go."""
    if lines is None and owners is None:
        return every_call(tree)
    found: list[ast.Call] = []
    todo: list[tuple[ast.AST, bool, ast.AST | None]] = [(tree, lines is not None, None)]
    fields_of, call, leaves, joined = FIELDS.get, ast.Call, LEAVES, ast.JoinedStr
    context, blocks = CONTEXT, BLOCKS
    peeking = owners is not None and lines is not None and unread is not None
    lines = lines or ()
    count = len(lines)
    for node, pruned, owner in todo:  # grows as it goes: breadth first
        kind = type(node)
        if kind is call:
            found.append(node)  # type: ignore[arg-type]
            if owners is not None:
                owners.append(owner)
        elif kind in leaves:
            continue
        fields = fields_of(kind)
        if fields is None:
            fields = node_fields(kind)
        inner = pruned and kind is not joined
        for field in fields:
            inner_owner = owner
            value: object = None
            if peeking and field == "body":
                value = unread(node)  # type: ignore[misc]
                inner_owner = node if value is not None else owner
            if value is None:
                value = getattr(node, field, None)
            children = value if type(value) is list else (value,)
            if inner and field in blocks and len(children) > SHORT_BLOCK:
                for statement in block_on(children, lines, count):  # type: ignore[arg-type]
                    todo.append((statement, inner, inner_owner))
                continue
            for child in children:
                if not isinstance(child, AST) or isinstance(child, context):
                    continue
                if inner:
                    start = getattr(child, "lineno", None)
                    end = getattr(child, "end_lineno", None)
                    if start is not None and end is not None:
                        decorators = getattr(child, "decorator_list", None)
                        if decorators:
                            start = min(start, *(d.lineno for d in decorators))
                        index = bisect_left(lines, start)
                        if index == count or lines[index] > end:
                            continue
                todo.append((child, inner, inner_owner))
    return found


# The nodes whose first line is their first decorator's (the others have no `decorator_list`;
# an `isinstance` test: analysis/bodies.py's unread functions are subclasses).
DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The fields that hold a block: statements (or `except` clauses) one after another, in the
# order of their lines, each with its position (an expression's `body` is a single node).
BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers"})
SHORT_BLOCK = 8  # statements a block's lines are tested one by one up to, bisected past


def first_line(statement: ast.AST) -> int:
    """A statement's first line, its decorators' included."""
    decorators = getattr(statement, "decorator_list", None)
    line: int = statement.lineno  # type: ignore[attr-defined]
    return min(line, *(d.lineno for d in decorators)) if decorators else line


def last_line(statement: ast.AST) -> int:
    return statement.end_lineno  # type: ignore[attr-defined]


def block_on(block: list[ast.AST], lines: Sequence[int], count: int) -> list[ast.AST]:
    """The statements of `block` whose lines, decorators included, hold one of `lines`
    (sorted; `count` of them), in order: found by bisection, as a block's statements follow
    one another (their first and last lines never go back; two may share a line, `a; b`)."""
    found: list[ast.AST] = []
    size = len(block)
    last = last_line(block[-1])
    index = 0  # the first statement that may hold the line looked at
    taken = -1  # the last statement found
    at = bisect_left(lines, first_line(block[0]))
    while at < count and lines[at] <= last:
        line = lines[at]
        index = bisect_left(block, line, index, size, key=last_line)  # the first ending on or after
        start = first_line(block[index])
        if start > line:  # between two statements: on to the next line in this one
            at = bisect_left(lines, start, at + 1, count)
            continue
        while index < size and (index <= taken or first_line(block[index]) <= line):
            if index > taken:
                found.append(block[index])
                taken = index
            index += 1
        index = taken  # the next line may lie in the last one found, or start after it
        at = bisect_left(lines, last_line(block[taken]), at + 1, count)
    return found


def every_call(tree: ast.AST) -> list[ast.Call]:
    """`calls_in(tree)`: every call, breadth first, no position looked at."""
    found: list[ast.Call] = []
    todo: list[ast.AST] = [tree]
    fields_of, call, leaves, context = FIELDS.get, ast.Call, LEAVES, CONTEXT
    append, add = found.append, todo.append
    for node in todo:  # grows as it goes: breadth first
        kind = type(node)
        if kind is call:
            append(node)  # type: ignore[arg-type]
        elif kind in leaves:
            continue
        fields = fields_of(kind)
        if fields is None:
            fields = node_fields(kind)
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for child in value:
                    if isinstance(child, AST) and not isinstance(child, context):
                        add(child)
            elif isinstance(value, AST) and not isinstance(value, context):
                add(value)
    return found


def inner_statements(statement: ast.stmt) -> list[ast.stmt]:
    """The statements of a compound statement's blocks (`body`, `orelse`, handlers, cases)."""
    return [inner for block in blocks_of(statement) for inner in block]


def blocks_of(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of a compound statement: its bodies, `except` clauses and `case`s (none
    for a statement of a type without such fields, most of them: no field is looked for)."""
    if not block_fields(type(statement)):
        return []
    found = [
        block
        for field in ("body", "orelse", "finalbody")
        if isinstance(block := getattr(statement, field, None), list) and block
    ]
    clauses = [*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())]
    return [*found, *(clause.body for clause in clauses)]


def target_names(target: ast.expr, attributes: bool = False) -> list[str]:
    """The plain names a target binds (`a, *b = ...`); `x.y` and `x[k]` bind none (with
    `attributes`, `x.y` gives its last name, `y`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if attributes and isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in target_names(element, attributes)]
    if isinstance(target, ast.Starred):
        return target_names(target.value, attributes)
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


def walk_on(tree: ast.AST, lines: list[int] | None) -> Iterator[ast.AST]:
    """`nodes.walk(tree)` (breadth first) left to the nodes whose lines, a definition's
    decorators included, hold one of `lines` (sorted; None: all), and those without a
    position; an f-string is walked whole (Python before 3.12 may misplace what is in it)."""
    count = len(lines or ())
    todo: deque[tuple[ast.AST, bool]] = deque([(tree, lines is not None)])
    while todo:
        node, pruned = todo.popleft()
        yield node
        inner = pruned and type(node) is not ast.JoinedStr
        for child in child_nodes(node):
            if inner and lines is not None and hasattr(child, "end_lineno"):
                end = child.end_lineno
                index = bisect_left(lines, first_line(child))
                if end is not None and (index == count or lines[index] > end):
                    continue
            todo.append((child, inner))
