"""Questions about the shape of `ast` nodes that the evaluator asks: literals, parameters, a
function's own body, what a statement binds, where a name sits in an unpacking target.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from amp_clipfix.analysis.nodes import (
    LEAVES,
    block_fields,
    child_nodes,
    literal_text,
    target_names,
)
from amp_clipfix.analysis.summary import Summary


def literal_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
        return literal_text(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal_of(node.operand)
        return None if inner is None else f"-{inner}"
    return None


def function_body_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own body (not of functions or classes defined inside), in
    the order of a stack: each node's children are taken last first."""
    found: list[ast.AST] = []
    stack = child_nodes(function)
    pop, append, extend = stack.pop, found.append, stack.extend
    while stack:
        node = pop()
        append(node)
        if not isinstance(node, SCOPES) and type(node) not in LEAVES:
            extend(child_nodes(node))
    return found


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# What a statement sits in or holds that may bind a name: statements, `except` clauses and
# `case`s (which hold statements), and `with` items (`as name`).
BLOCK_NODES = (ast.stmt, ast.ExceptHandler, ast.match_case, ast.withitem)


def own_statements(function: ast.AST) -> list[ast.AST]:
    """The nodes of `function_body_nodes` that are statements, `except` clauses, `case`s or
    `with` items, in its order, walked without going into expressions (no statement is ever
    inside one): the same walk, its expression subtrees left out. Only the list fields that
    can hold those are read (block_fields): no other child is listed, then dropped."""
    found: list[ast.AST] = []
    stack = own_blocks(function)
    pop, append, extend = stack.pop, found.append, stack.extend
    while stack:
        node = pop()
        append(node)
        if not isinstance(node, SCOPES):
            extend(own_blocks(node))
    return found


def own_blocks(node: ast.AST) -> list[ast.AST]:
    """`[c for c in child_nodes(node) if isinstance(c, BLOCK_NODES)]`, reading only the
    fields that may hold them, in the fields' order."""
    found: list[ast.AST] = []
    for field in block_fields(type(node)):
        value = getattr(node, field, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, BLOCK_NODES))
    return found


def all_params(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether `inner` lies within `outer` (a `with` item spans its expression and target)."""
    first = last = outer
    if isinstance(outer, ast.withitem):
        first, last = outer.context_expr, outer.optional_vars or outer.context_expr
    if not hasattr(first, "lineno") or not hasattr(inner, "lineno"):
        return False
    start = (first.lineno, first.col_offset)  # type: ignore[attr-defined]
    end = (last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]
    where = (inner.lineno, inner.col_offset)  # type: ignore[attr-defined]
    return start <= where <= end


def forwards_kwargs(function: ast.AST) -> bool:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    named = {p.arg for p in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return args.kwarg is not None and "fused" not in named


def is_super_call(func: ast.expr) -> bool:
    """`super().name` (the method of a base class)."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def is_method(summary: Summary, function: ast.AST) -> bool:
    """A function defined directly in a class body, not a staticmethod."""
    return isinstance(summary.parent(function), ast.ClassDef) and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod"
        for d in getattr(function, "decorator_list", ())
    )


def is_module_level(summary: Summary, node: ast.AST) -> bool:
    """Defined at the top of its module (also inside a top-level `if` / `try`)."""
    parent = summary.parent(node)
    while isinstance(parent, (ast.If, ast.Try, ast.ExceptHandler)):
        parent = summary.parent(parent)
    return isinstance(parent, ast.Module)


def super_init_call(cls: ast.ClassDef) -> ast.Call | None:
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            for node in function_body_nodes(statement):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "__init__"
                    and isinstance(node.func.value, ast.Call)
                    and isinstance(node.func.value.func, ast.Name)
                    and node.func.value.func.id == "super"
                ):
                    return node
    return None


def first_param(function: ast.AST) -> str | None:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    return positional[0].arg if positional else None


def bound_names(node: ast.AST) -> list[str]:
    """Names a statement binds in its scope."""
    if isinstance(node, ast.Assign):
        return [n for target in node.targets for n in target_names(target)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return target_names(node.target)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return target_names(node.target)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".", 1)[0] for alias in node.names]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return target_names(node.optional_vars)
    if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def target_path(target: ast.expr, name: str) -> tuple[int, ...] | None:
    """Where `name` sits in an unpacking target: () for `name = ...`, (1,) for `a, name = ...`."""
    if isinstance(target, ast.Name):
        return () if target.id == name else None
    if isinstance(target, (ast.Tuple, ast.List)):
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Starred):
                return None
            inner = target_path(element, name)
            if inner is not None:
                return (index, *inner)
    return None


def attribute_targets(target: ast.expr, path: tuple[int, ...] = ()):  # noqa: ANN201
    if isinstance(target, ast.Attribute):
        yield target, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for index, element in enumerate(target.elts):
            yield from attribute_targets(element, (*path, index))


def declared_global(body: Iterable[ast.AST]) -> frozenset[str]:
    """The names a function's own body declares `global` (`body`: function_body_nodes)."""
    return frozenset(name for node in body if isinstance(node, ast.Global) for name in node.names)


def global_rebinds(summary: Summary) -> dict[str, list[ast.AST]]:
    """The statements that bind a module-level name inside a function that declares it
    `global` (`global PRECISION` then `PRECISION = "16-mixed"`), by name, in source order:
    values the module's name may hold besides its own bindings."""
    found: dict[str, list[ast.AST]] = {}
    functions: dict[int, ast.AST] = {}
    for statement in summary.walked_statements_with(b"global"):
        if isinstance(statement, ast.Global):
            function, _ = summary.enclosing(statement)
            if function is not None:
                functions.setdefault(id(function), function)
    for function in functions.values():
        nodes = list(function_body_nodes(function))
        declared = declared_global(nodes)
        for node in nodes:
            for name in bound_names(node):
                if name in declared:
                    found.setdefault(name, []).append(node)
    for bindings in found.values():
        bindings.sort(key=lambda node: (node.lineno, node.col_offset))  # type: ignore[attr-defined]
    return found
