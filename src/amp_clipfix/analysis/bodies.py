"""Function bodies that nothing has read are let go, and parsed again when first read.

The `ast` trees of the modules the evaluator loads are most of a run's memory, and most of a
tree is function bodies. A search reads a few functions of each module it loads; the rest is
never looked at, yet every summary keeps its whole tree to the end of the run (the
evaluator's values and memos pin the trees, so a tree cannot be dropped and parsed again: a
second parse gives new nodes, and the memos and values compare nodes by identity).

A body nothing has read, though, has handed out no node: nothing can hold one of its nodes,
so dropping it and parsing it again later gives nodes nobody can tell from the first ones
(the same bytes give the same tree). So, per run (`Bodies`, held by the run's `Collection`;
nothing is set on the `ast` classes and two runs share nothing):

- `Bodies.note(tree, lines)`: the module-level and class-level functions of a tree the
  summary parsed itself are noted as unread: each node's class becomes this module's
  subclass of its `ast` class (`FunctionDef`, `AsyncFunctionDef`: the same name, fields and
  layout; `isinstance` and every visitor by name see the `ast` class), whose `body` is a
  property.
- Reading the `body` of an unread function (the attribute, `getattr`, `ast.walk`,
  `compile`) gives the node back its `ast` class: read for good, a plain attribute from then
  on.
- `Bodies.let_go()`, before each rule once the bodies noted since the last let-go span
  `HELD_LINES`, puts a placeholder (`Unread`) in place of every body still unread: the
  module's lines it can be parsed again from. The node's attribute dict keeps its size (a
  key replaced, not added). Before a module is loaded, `let_go_older` lets go of the bodies
  of the generation before (noted before the last turn) once the newer span `HELD_LINES`:
  a body noted just before the bound is crossed is not let go at the next load.
- Reading a let-go body parses the function's own lines again (its decorators' first line
  to its last, under an `if 1:` when it is indented, at its own line numbers) and checks
  that the function found is the one noted (name and positions); else the whole module is
  parsed again and the function found by its position. The body then stays.
- `peek(node)`: the body for a fact that hands out none of its nodes (names, say, or the
  calls on some lines until one is kept: nodes.calls_in): an unread body stays unread
  (parsed again when it was let go, let go again at the next let-go).

Trees the collection's readers parsed (their sites hold nodes of bodies this process never
read through the attribute) and trees made any other way are never noted.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from amp_clipfix.analysis.nodes import child_nodes, node_fields

Function = ast.FunctionDef | ast.AsyncFunctionDef
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The lines of the functions noted unread past which the bodies still unread are let go before a
# module is loaded (those of the generation before) or a rule runs: a bound on the trees held
# that nothing read, without parsing again the bodies read soon after their module is loaded
# (letting go before every load, NeMo parsed again 42,600 lines, 0.17 s, mmengine 28,000) or by
# a later rule (letting go before every rule whatever the bound, the Lightning tree parsed 34
# bodies again and let go of 641: 0.02 s of its rules' 0.4 s). Session 25 (`mem`): letting go
# of all past 60,000 lines, DeepLearningExamples parsed again 33,800 lines and peaked at 296 MB
# (with the word index's fix); of the generation before past 20,000 lines, 35,400 and 282 MB
# (10,000: 270 MB, but mmengine parsed again 5,400 lines, 4% of its run; ColossalAI 16,700 ->
# 12,300 lines at 20,000).
HELD_LINES = 20_000


class Unread:
    """A body let go: the module's UTF-8 lines it is parsed again from, and the run's bodies
    (a body `peek` parses again joins them, to be let go again)."""

    __slots__ = ("lines", "bodies")

    def __init__(self, lines: Sequence[bytes], bodies: Bodies) -> None:
        self.lines, self.bodies = lines, bodies


def read_body(node: Function) -> list[ast.stmt]:
    """The `body` of a function nothing had read: the node is read for good."""
    try:
        body = node.__dict__["body"]
    except KeyError:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute 'body'") from None
    if type(body) is Unread:
        body = parse_again(node, body.lines)
    node.__class__ = READ[type(node)]  # an `ast` node as any other from now on
    return body


def set_body(node: Function, body: list[ast.stmt]) -> None:
    node.__dict__["body"] = body  # a body given by code is not the text's: never let go
    node.__class__ = READ[type(node)]


def delete_body(node: Function) -> None:
    del node.__dict__["body"]
    node.__class__ = READ[type(node)]


class FunctionDef(ast.FunctionDef):
    """A `def` whose body nothing has read (the `ast` class's name, fields and layout)."""

    __slots__ = ()
    body = property(read_body, set_body, delete_body)


class AsyncFunctionDef(ast.AsyncFunctionDef):
    """An `async def` whose body nothing has read."""

    __slots__ = ()
    body = property(read_body, set_body, delete_body)


UNREAD: dict[type, type] = {ast.FunctionDef: FunctionDef, ast.AsyncFunctionDef: AsyncFunctionDef}
READ: dict[type, type] = {unread: read for read, unread in UNREAD.items()}
UNREAD_KINDS = frozenset(READ)


class Bodies:
    """One run's functions whose bodies are held and were unread when noted (since the last
    `let_go`), with the module's UTF-8 lines of each: those noted since the last turn
    (`unread`) and before it (`older`, let_go_older)."""

    __slots__ = ("unread", "lines", "older", "older_lines")

    def __init__(self) -> None:
        self.unread: list[tuple[Function, Sequence[bytes]]] = []
        self.lines = 0  # the lines of the functions noted since the last let_go
        self.older: list[tuple[Function, Sequence[bytes]]] = []  # noted before the last turn
        self.older_lines = 0

    def add(self, node: Function, lines: Sequence[bytes]) -> None:
        self.unread.append((node, lines))
        self.lines += (node.end_lineno or node.lineno) - node.lineno + 1

    def note(self, tree: ast.Module, lines: Sequence[bytes]) -> None:
        """Note the functions of `tree` (module level, in classes, in `if` / `try` blocks) as
        unread. Only for a tree just parsed from `lines` whose nodes no one holds yet."""
        todo: list[ast.stmt] = list(tree.body)
        while todo:
            statement = todo.pop()
            kind = type(statement)
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                statement.__class__ = UNREAD[kind]
                self.add(statement, lines)  # type: ignore[arg-type]
            elif kind is ast.ClassDef:
                todo.extend(statement.body)  # type: ignore[attr-defined]
            elif kind is ast.If or kind is ast.Try:
                todo.extend(statement.body)  # type: ignore[attr-defined]
                todo.extend(statement.orelse)  # type: ignore[attr-defined]
                if kind is ast.Try:
                    todo.extend(statement.finalbody)  # type: ignore[attr-defined]
                    for handler in statement.handlers:  # type: ignore[attr-defined]
                        todo.extend(handler.body)

    def let_go(self, held: int = 0) -> int:
        """Let go of every body noted that is still unread (both generations), once they span
        more than `held` lines; returns how many. Wherever
        no node of a body `peek` gave is held (each reader of one keeps none past its own
        return): the run calls it before each rule (HELD_LINES)."""
        if self.lines + self.older_lines <= held:
            return 0
        count = self.release(self.older) + self.release(self.unread)
        self.older, self.unread, self.lines, self.older_lines = [], [], 0, 0
        return count

    def let_go_older(self, held: int) -> int:
        """Once the bodies noted since the last turn span more than `held` lines: let go of
        those noted before it that are still unread, and turn (the newer become the older).
        A body is so held for at least `held` lines of later loads: a module is loaded for a
        search that often reads it soon after (`let_go` may let go of one just loaded). The
        run calls it before it loads a module (project_resolve.summary_loader)."""
        if self.lines <= held:
            return 0
        count = self.release(self.older)
        self.older, self.unread = self.unread, []
        self.older_lines, self.lines = self.lines, 0
        return count

    def release(self, noted: list[tuple[Function, Sequence[bytes]]]) -> int:
        count = 0
        for node, lines in noted:
            if type(node) in UNREAD_KINDS and type(node.__dict__.get("body")) is list:
                node.__dict__["body"] = Unread(lines, self)
                count += 1
        return count

    def forget(self) -> None:
        """Keep the unread bodies as they are and let go of the list (and of its hold on the
        trees): a project's analysis is over."""
        self.unread, self.older, self.older_lines = [], [], 0


def peek(node: Function) -> list[ast.stmt]:
    """The body of `node` for a fact that hands out none of its nodes (the names a method
    assigns, say): an unread body stays unread, parsed again when it was let go."""
    if type(node) not in UNREAD_KINDS:
        return node.body
    body = node.__dict__["body"]
    if type(body) is not Unread:
        return body
    body.bodies.add(node, body.lines)  # held again: let go again
    return parse_again(node, body.lines)


def peeked_walk(tree: ast.AST) -> Iterator[ast.AST]:
    """`nodes.walk(tree)`: the same nodes in the same order, for a reader that keeps none of
    them past its own return (a rule's edits hold spans, not nodes): the body of a function
    nothing has read is looked at with `peek` and stays unread, to be let go. A walk reading
    each body held every function of a module to the end of the run (acf012's import edits
    on the hundred `train.py` of icefall: 35 MB of its peak)."""
    todo: deque[ast.AST] = deque([tree])
    unread_kinds, children = UNREAD_KINDS, child_nodes
    while todo:
        current = todo.popleft()
        if type(current) in unread_kinds:
            todo.extend(peeked_children(current))
        else:
            todo.extend(children(current))
        yield current


def peeked_child_nodes(node: ast.AST) -> list[ast.AST]:
    """`nodes.child_nodes(node)`, the body of a function nothing has read looked at by `peek`
    (for a walk that keeps no node: the body stays unread)."""
    return peeked_children(node) if type(node) in UNREAD_KINDS else child_nodes(node)


def peeked_children(node: ast.AST) -> list[ast.AST]:
    """`nodes.child_nodes(node)` of a function nothing has read, its body looked at by `peek`."""
    body = peek(node)  # type: ignore[arg-type]
    children: list[ast.AST] = []
    for field in node_fields(type(node)):
        value = body if field == "body" else getattr(node, field, None)
        if type(value) is list:
            children.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
            children.append(value)
    return children


def kept_calls(
    found: list[ast.Call], owners: list[ast.AST | None], keep: Callable[[ast.Call], bool]
) -> list[ast.Call]:
    """The calls of `found` that `keep` keeps, the bodies nodes.calls_in found them in
    (`owners`, one for each call, or none at all) read for good; the others stay unread.
    All kept: `found` itself (a module's every call is listed once, never copied)."""
    kept = [index for index, call in enumerate(found) if keep(call)]
    for owner in {id(owners[i]): owners[i] for i in kept if owners}.values():
        if type(owner) in UNREAD_KINDS:
            owner.body  # type: ignore[union-attr]  # noqa: B018 - the read is the point
    return found if len(kept) == len(found) else [found[index] for index in kept]


def unread_body(node: ast.AST) -> list[ast.stmt] | None:
    """`peek(node)` for a function nothing has read, else None (nodes.calls_in)."""
    return peek(node) if type(node) in UNREAD_KINDS else None  # type: ignore[arg-type]


def parse_again(node: Function, lines: Sequence[bytes]) -> list[ast.stmt]:
    """The body of `node` parsed again from the module's lines, and held by it again."""
    found = function_from_lines(node, lines) or function_from_module(node, lines)
    if found is None:  # the same bytes give the same tree: never, unless the lines changed
        raise RuntimeError(f"function {node.name!r} at line {node.lineno} not found again")
    body = found.__dict__["body"]
    node.__dict__["body"] = body
    return body


def first_line(node: Function) -> int:
    return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def same_function(node: Function, other: ast.AST) -> bool:
    if type(other) is not READ.get(type(node), type(node)) or not isinstance(other, FUNCTIONS):
        return False
    return (
        other.name == node.name
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
