"""The one binding of a name that reaches a use in straight-line code.

The evaluator follows values flow-insensitively: a name bound twice in one scope holds both
values everywhere. Where that joins two things a finding must keep apart (`trainer = Trainer(...)`
bound again for a second run: each `trainer.fit(...)` trains with the Trainer bound last before
it), `reaching_value` gives the value of the plain `name = value` every path to the use passes
last, and None wherever another binding may reach it (a branch, a loop that binds the name again,
a `try` whose body may have bound it, another scope's `global` / `nonlocal`).
"""

from __future__ import annotations

import ast
import functools

from amp_clipfix.analysis.nodes import inner_statements, walk
from amp_clipfix.analysis.shapes import bound_names, contains

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
TRIES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))

# One step of the way from a scope down to a use: the block (a statement list), the index of
# the statement holding the use, and the statement (or handler) that owns the block.
Step = tuple[list[ast.stmt], int, ast.AST]


def reaching_value(scope: ast.AST, use: ast.AST, name: str) -> ast.expr | None:
    """The value of the last plain `name = value` before `use` in the straight-line code of
    `scope` (a function or a module), or None where that is not the only binding reaching it."""
    if declared_elsewhere(scope, name):
        return None
    steps = way(scope, use)
    if steps is None:
        return None
    for index in range(len(steps) - 1, -1, -1):
        block, at, owner = steps[index]
        for statement in reversed(block[:at]):
            if binds(statement, name):
                return plain_value(statement, name)
        if not passes(owner, block, name):
            return None
    return None


def fit_receiver(call: ast.Call, scope: ast.AST) -> ast.expr:
    """What `x.fit(...)` (a call in `scope`, its innermost function or the module) is called
    on: for a name, the value of the binding that reaches the call in straight-line code
    (`trainer = Trainer(...)` bound again for a second run fits with the Trainer bound last),
    else the receiver itself (every value the name may hold)."""
    assert isinstance(call.func, ast.Attribute)
    receiver = call.func.value
    if isinstance(receiver, ast.Name):
        value = reaching_value(scope, call, receiver.id)
        if value is not None:
            return value
    return receiver


def way(scope: ast.AST, use: ast.AST) -> list[Step] | None:
    """The blocks from `scope`'s body down to the statement holding `use`."""
    steps: list[Step] = []
    owner: ast.AST = scope
    block = getattr(scope, "body", None)
    if not isinstance(block, list):
        return None  # a lambda: no statements
    while True:
        at = next((i for i, s in enumerate(block) if contains(s, use)), None)
        if at is None:
            return None
        steps.append((block, at, owner))
        statement = block[at]
        inner = next(
            ((b, o) for b, o in blocks_of(statement) if any(contains(s, use) for s in b)), None
        )
        if inner is None:
            return steps  # the use is in this statement's own expressions
        if isinstance(statement, SCOPES):
            return None  # another scope: its names are not this scope's
        block, owner = inner


def blocks_of(statement: ast.stmt) -> list[tuple[list[ast.stmt], ast.AST]]:
    """The statement lists a compound statement holds, each with what owns it."""
    found: list[tuple[list[ast.stmt], ast.AST]] = [
        (getattr(statement, field), statement)
        for field in ("body", "orelse", "finalbody")
        if isinstance(getattr(statement, field, None), list)
    ]
    found += [(handler.body, statement) for handler in getattr(statement, "handlers", [])]
    found += [(case.body, statement) for case in getattr(statement, "cases", [])]
    return found


def passes(owner: ast.AST, block: list[ast.stmt], name: str) -> bool:
    """Whether leaving `block` for the code around `owner` keeps the way straight: nothing in
    `owner` outside the block may bind the name before the use runs."""
    if isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    if isinstance(owner, ast.If):
        return not binds(owner.test, name)
    if isinstance(owner, (ast.With, ast.AsyncWith)):
        return not any(binds(item, name) for item in owner.items)
    if isinstance(owner, LOOPS):
        return not binds(owner, name)  # a later binding in the loop comes round again
    if isinstance(owner, TRIES):
        body: list[ast.stmt] = owner.body  # type: ignore[attr-defined]
        handlers: list[ast.ExceptHandler] = owner.handlers  # type: ignore[attr-defined]
        caught = any(h.body is block and h.name == name for h in handlers)
        return block is body or not (caught or any(binds(s, name) for s in body))
    return False  # a `match` case and anything else: not followed


def binds(node: ast.AST, name: str) -> bool:
    """Whether the code of `node` binds `name` in its scope (not in functions inside it)."""
    for inner in walk(node):
        if name in bound_names(inner):
            return True
        if isinstance(inner, ast.ExceptHandler) and inner.name == name:
            return True
        if isinstance(inner, (ast.Delete, ast.Global, ast.Nonlocal)) and name in names_of(inner):
            return True
        if isinstance(inner, (ast.MatchAs, ast.MatchStar)) and inner.name == name:
            return True
    return False


def names_of(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Delete):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return list(getattr(node, "names", []))


def plain_value(statement: ast.stmt, name: str) -> ast.expr | None:
    """`name = value` (one target, the name itself), else None."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    ):
        return statement.value
    if (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id == name
    ):
        return statement.value
    return None


def declared_elsewhere(scope: ast.AST, name: str) -> bool:
    """A function inside `scope` that rebinds the name through `global` / `nonlocal`."""
    return name in declared_names(scope)


@functools.lru_cache(maxsize=64)
def declared_names(scope: ast.AST) -> frozenset[str]:
    """The names `global` / `nonlocal` statements inside `scope` declare: one walk per scope,
    not one per fit call (a module of thousands of statements has many). Both are statements,
    and a statement sits only in a block of a statement (or of the module), so the walk reads
    the statements alone, never their expressions (nine nodes in ten)."""
    found: set[str] = set()
    stack: list[ast.stmt] = []
    if isinstance(scope, ast.Module):
        stack = list(scope.body)
    elif isinstance(scope, ast.stmt):
        stack = [scope]  # a function (a lambda holds no statement)
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.Global, ast.Nonlocal)):
            found.update(statement.names)
        stack.extend(inner_statements(statement))
    return frozenset(found)
