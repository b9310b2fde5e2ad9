"""Qualified names of `ast` expressions, as libcst's QualifiedNameProvider gives them.

The collector used to ask libcst; reading with the stdlib `ast` is many times faster, so this
module rebuilds the part of libcst's scope analysis the collector needs: which bindings a name
refers to (imports, definitions, assignments, builtins; class bodies hidden from nested
functions; `global` / `nonlocal`) and what qualified name each binding gives. libcst's rules are
kept, odd ones too, so that findings do not change: an access sees a binding of its own scope
only once the statement that makes it has ended, an attribute chain (`torch.optim.AdamW`) is
resolved through every binding of its root, and a relative import keeps its dots (`.m.Name`).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import Any

from amp_clipfix.analysis.nodes import child_nodes

Position = tuple[int, int]  # (line, byte column) in ast's coordinates
END_OF_FILE: Position = (1 << 62, 0)


class Binding:
    """One binding of a name: `ready` is where it becomes visible to its own scope. It says
    which qualified name the name stands for (an import, or a definition of this module), never
    what an assignment holds: values are the project evaluator's. (This module's classes are
    written by hand, not made by `@dataclass`, which compiles their methods at every import.)"""

    def __init__(
        self,
        name: str,
        scope: Scope,
        ready: Position,
        imported: ast.Import | ast.ImportFrom | None = None,
    ) -> None:
        self.name = name
        self.scope = scope
        self.ready = ready
        self.imported = imported

    def qualified_names(self, full_name: str) -> set[str]:
        if self.imported is not None:
            return import_qualified_names(self.imported, full_name)
        prefix = self.scope.prefix
        return {f"{prefix}.{full_name}" if prefix else full_name}


class BuiltinBinding:
    def __init__(self, name: str) -> None:
        self.name = name

    def qualified_names(self, full_name: str) -> set[str]:
        return {f"builtins.{self.name}"}


AnyBinding = Binding | BuiltinBinding


class Scope:
    def __init__(self, kind: str, parent: Scope | None, name: str | None = None) -> None:
        self.kind = kind  # "global", "class", "function", "comprehension"
        self.parent = parent
        self.name = name
        self.bindings: dict[str, list[Binding]] = {}
        self.overwrites: dict[str, Scope] = {}  # `global x` / `nonlocal x`
        parent_prefix: str = parent.prefix if parent is not None else ""
        parts: list[str | None] = {
            "global": [],
            "class": [parent_prefix, name],
            "function": [parent_prefix, name, "<locals>"],
            "comprehension": [parent_prefix, "<comprehension>"],
        }[kind]  # type: ignore[assignment]
        self.prefix: str = ".".join(part for part in parts if part)

    @property
    def globals(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def visible_parent(self, first: Scope | None = None) -> Scope | None:
        """The parent whose names show through: class bodies are hidden from nested scopes."""
        parent = first if first is not None else self.parent
        while parent is not None and parent.kind == "class":
            parent = parent.parent
        return parent

    def __contains__(self, name: str) -> bool:
        if name in self.overwrites:
            return name in self.overwrites[name]
        if self.bindings.get(name):
            return True
        parent = self.visible_parent()
        return hasattr(builtins, name) if parent is None else name in parent

    def resolve(self, name: str) -> list[AnyBinding]:
        """The bindings `name` may refer to from this scope, whatever their order."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.overwrites:
                scope = self.visible_parent(scope.overwrites[name])
                continue
            if name in scope.bindings:
                return list(scope.bindings[name])
            scope = scope.visible_parent()
        return builtin_bindings(name)

    def target(self, name: str) -> Scope:
        """Where an assignment of `name` made in this scope lands."""
        if name in self.overwrites and self.kind != "global":
            overwrite = self.visible_parent(self.overwrites[name])
            return overwrite.target(name) if overwrite is not None else self
        return self

    def bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)


def import_qualified_names(statement: ast.Import | ast.ImportFrom, full_name: str) -> set[str]:
    """libcst's ImportAssignment.get_qualified_names_for, on an `ast` import."""
    module = ""
    if isinstance(statement, ast.ImportFrom):
        module = "." * statement.level + (statement.module or "")
    results: set[str] = set()
    for alias in statement.names:
        parts = alias.name.split(".")
        for length in range(len(parts), 0, -1):
            real_name = as_name = ".".join(parts[:length])
            if module.endswith("."):
                real_name = f"{module}{real_name}"
            elif module:
                real_name = f"{module}.{real_name}"
            if alias.asname:
                as_name = alias.asname
            if full_name.startswith(as_name):
                remaining = full_name.split(as_name, 1)[1]
                if remaining and not remaining.startswith("."):
                    continue
                remaining = remaining.lstrip(".")
                results.add(f"{real_name}.{remaining}" if remaining else real_name)
                break
    return results


def full_name(node: ast.AST) -> str | None:
    """libcst's get_full_name_for_node: `a.b.c`, the callee of a call, the value subscripted."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{full_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return full_name(node.func)
    if isinstance(node, ast.Subscript):
        return full_name(node.value)
    return None


def position(node: ast.AST) -> Position:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def end_position(node: ast.AST) -> Position:
    return node.end_lineno or 0, node.end_col_offset or 0  # type: ignore[attr-defined]


class ScopeBuilder(ast.NodeVisitor):
    """Records every binding into the scope that holds it; `scopes` maps the nodes that open a
    scope (functions, lambdas, classes, comprehensions) to it."""

    def __init__(self) -> None:
        self.scope = Scope("global", None)
        self.scopes: dict[int, Scope] = {}
        self.ready: Position = END_OF_FILE  # where the bindings being recorded become visible

    def bind(self, name: str, imported=None) -> None:
        scope = self.scope.target(name)
        scope.bind(Binding(name, scope, self.ready, imported))

    def visit_with_ready(self, ready: Position, nodes: list) -> None:
        saved, self.ready = self.ready, ready
        for node in nodes:
            if node is not None:
                self.visit(node)
        self.ready = saved

    def open(self, node: ast.AST, kind: str, name: str | None) -> Scope:
        scope = Scope(kind, self.scope, name)
        self.scopes[id(node)] = scope
        return scope

    def visit(self, node: ast.AST) -> None:
        method = BUILDER_VISITORS.get(type(node))
        if method is None:
            name = f"visit_{type(node).__name__}"
            method = BUILDER_VISITORS[type(node)] = getattr(ScopeBuilder, name, generic_visit)
        method(self, node)

    def visit_Constant(self, node: ast.Constant) -> None:
        pass  # no children; also skips NodeVisitor's slow deprecation shim

    # -- bindings -------------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.bind(node.id)

    def visit_Import(self, node: ast.Import) -> None:
        self.bind_import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.bind_import(node)

    def bind_import(self, node: ast.Import | ast.ImportFrom) -> None:
        saved, self.ready = self.ready, end_position(node)
        for alias in node.names:
            if alias.name == "*":
                return
            if alias.asname:
                self.bind(alias.asname, imported=node)
                continue
            parts = alias.name.split(".")
            for length in range(len(parts), 0, -1):
                self.bind(".".join(parts[:length]), imported=node)
        self.ready = saved

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if self.scope.kind != "global":
                self.scope.overwrites[name] = self.scope.globals

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            if self.scope.parent is not None:
                self.scope.overwrites[name] = self.scope.parent

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit_with_ready(end_position(node), [*node.targets, node.value])

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit_with_ready(end_position(node), [node.target, node.value])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit_with_ready(end_position(node), [node.target, node.annotation, node.value])

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit_with_ready(end_position(node), [node.target, node.value])

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit_with_ready(end_position(node.target), [node.target])
        for child in (node.iter, *node.body, *node.orelse):
            self.visit(child)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        end = end_position(node.optional_vars or node.context_expr)
        self.visit_with_ready(end, [node.context_expr, node.optional_vars])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            saved, self.ready = self.ready, position(node.body[0])
            self.bind(node.name)
            self.ready = saved
        for child in node.body:
            self.visit(child)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.bind(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.bind(node.rest)
        self.generic_visit(node)

    # -- scopes ---------------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        saved, self.ready = self.ready, end_position(node)
        self.bind(node.name)
        self.ready = saved
        self.visit_arguments_outside(node.args)
        parent, self.scope = self.scope, self.open(node, "function", node.name)
        self.bind_parameters(node.args)
        for statement in node.body:
            self.visit(statement)
        self.scope = parent
        for child in (*node.decorator_list, node.returns):
            if child is not None:
                self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit_arguments_outside(node.args)
        parent, self.scope = self.scope, self.open(node, "function", None)
        self.bind_parameters(node.args)
        self.visit(node.body)
        self.scope = parent

    def visit_arguments_outside(self, args: ast.arguments) -> None:
        """Defaults and annotations belong to the scope around the function."""
        for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                self.visit(default)

    def bind_parameters(self, args: ast.arguments) -> None:
        every = (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg)
        present = [arg for arg in every if arg is not None]
        saved, self.ready = self.ready, end_position(present[-1]) if present else (0, 0)
        for arg in present:
            self.bind(arg.arg)
        self.ready = saved

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        saved, self.ready = self.ready, end_position(node)
        self.bind(node.name)
        self.ready = saved
        for child in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(child)
        parent, self.scope = self.scope, self.open(node, "class", node.name)
        for statement in node.body:
            self.visit(statement)
        self.scope = parent

    def visit_comprehension_node(self, node: ast.AST, generators: list, elements: list) -> None:
        self.visit(generators[0].iter)
        parent, self.scope = self.scope, self.open(node, "comprehension", None)
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            self.visit_with_ready(end_position(generator.target), [generator.target])
            for condition in generator.ifs:
                self.visit(condition)
        for element in elements:
            self.visit(element)
        self.scope = parent

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self.visit_comprehension_node(node, node.generators, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp  # type: ignore[assignment]

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self.visit_comprehension_node(node, node.generators, [node.key, node.value])


def generic_visit(builder: ScopeBuilder, node: ast.AST) -> None:
    for child in child_nodes(node):
        builder.visit(child)


BUILDER_VISITORS: dict[type, Callable[[ScopeBuilder, Any], None]] = {}


def build_scopes(tree: ast.Module) -> tuple[Scope, dict[int, Scope]]:
    builder = ScopeBuilder()
    builder.visit(tree)
    return builder.scope, builder.scopes


def referents(scope: Scope, name: str, at: Position) -> list[AnyBinding]:
    """The bindings an access of `name` at `at` sees (libcst's Access.referents): a binding of
    the access's own scope counts once its statement has ended; before that the access looks
    one scope further out."""
    found: list[AnyBinding] = []
    for binding in scope.resolve(name):
        if isinstance(binding, BuiltinBinding) or binding.scope is not scope or binding.ready < at:
            found.append(binding)
        else:
            outer = binding.scope.parent
            shadowing = outer.resolve(name) if outer is not None else builtin_bindings(name)
            found.extend(shadowed for shadowed in shadowing if shadowed not in found)
    return found


def builtin_bindings(name: str) -> list[AnyBinding]:
    return [BuiltinBinding(name)] if hasattr(builtins, name) else []
