"""The site collector's walk: source order (libcst's), the scope each node is read in, guards,
and how a site is added. Which Fabric a receiver holds is no question here: the project's
evaluator answers it (resolve_entries.py).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import SourceText, clip_call_of
from amp_clipfix.analysis.nodes import child_nodes, walk
from amp_clipfix.analysis.scopes import (
    Scope,
    build_scopes,
    full_name,
    position,
    referents,
)
from amp_clipfix.models import (
    Certainty,
    ClassInfo,
    EntryId,
    Sharding,
    Site,
    SiteKind,
    Span,
    Through,
)
from amp_clipfix.records import replace

UNSCALE_HELPERS = (names.FABRIC_UNSCALE_HELPER, names.MODULE_UNSCALE_HELPER)


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class CollectorBase(ast.NodeVisitor):
    """Visits in source order (libcst's order, which the sites' order follows) and keeps the
    scope each node is read in."""

    def __init__(self, path: Path, source: SourceText, tree: ast.Module) -> None:
        self.path = path
        self.source = source
        self.scope, self.scopes = build_scopes(tree)
        self.sites: list[Site] = []
        self.classes: list[ClassInfo] = []
        self.has_guard_helper = False
        self.class_stack: list[str] = []
        self.function_stack: list[ast.AST] = []  # the functions the visit is inside
        self.unscaled_classes: set[str] = set()  # classes whose clipping the unscale fix made
        self.guard_depth = 0
        self.entry_calls: list[EntryId] = []  # Fabric(...) / Trainer(...) calls being visited
        self.entry_sharding: dict[EntryId, Sharding] = {}  # their `strategy=`, as a fact
        self.statement_calls: dict[int, ast.stmt] = {}  # calls a whole statement makes
        self.statement: ast.stmt | None = None  # the statement being visited

    # -- traversal -----------------------------------------------------------------------------

    def generic_visit(self, node: ast.AST) -> None:
        for child in source_order_children(node):
            self.visit(child)

    def in_scope(self, node: ast.AST, children: list) -> None:
        outer, self.scope = self.scope, self.scopes[id(node)]
        for child in children:
            if child is not None:
                self.visit(child)
        self.scope = outer

    # -- helpers -------------------------------------------------------------------------------

    def qualified_names(self, node: ast.AST, scope: Scope | None = None) -> set[str]:
        scope = scope or self.scope
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            return {
                qualified
                for binding in referents(scope, node.id, position(node))
                for qualified in binding.qualified_names(binding.name)
            }
        name = full_name(node)
        prefix: str | None = name
        while prefix:
            if prefix in scope:
                return {
                    qualified
                    for binding in scope.resolve(prefix)
                    for qualified in binding.qualified_names(name)  # type: ignore[arg-type]
                }
            cut = prefix.rfind(".")
            prefix = None if cut == -1 else prefix[:cut]
        return set()

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def visit(self, node: ast.AST) -> None:
        visitor = VISITORS.get(type(node))
        if visitor is None:
            visitor = VISITORS[type(node)] = visitor_of(type(self), type(node))
        if isinstance(node, ast.stmt):
            outer, self.statement = self.statement, node
            visitor(self, node)
            self.statement = outer
        else:
            visitor(self, node)

    def visit_Constant(self, node: ast.Constant) -> None:
        pass  # no children; also skips NodeVisitor's slow deprecation shim

    def indentation(self) -> str:
        """The indentation of the block the current statement is in."""
        return "" if self.statement is None else self.source.indentation(self.statement.lineno)

    def code(self, node: ast.AST, sole_argument: bool = False) -> str:
        return self.source.code(node, sole_argument, self.indentation())

    def argument_code(self, node: ast.keyword) -> str:
        return self.source.argument_code(node, self.indentation())

    def add(
        self,
        kind: SiteKind,
        node: ast.AST,
        certainty: Certainty,
        detail: str,
        value: str | None = None,
        fixable: bool = True,
        sharding: Sharding | None = None,
        through: Through = Through.ARGUMENT,
    ) -> None:
        entry = self.entry_calls[-1] if self.entry_calls else None
        if sharding is None:
            sharding = self.entry_sharding.get(entry, Sharding.NONE) if entry else Sharding.NONE
        self.sites.append(
            Site(
                kind=kind,
                path=self.path,
                span=self.span(node),
                certainty=certainty,
                detail=detail,
                value=value,
                owner=self.class_stack[-1] if self.class_stack else None,
                fixable=fixable,
                entry=entry,
                sharding=sharding,
                through=through,
            )
        )

    # -- structure -----------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        base_names: list[str] = []
        for base in node.bases:
            value = base.value if isinstance(base, ast.Starred) else base
            qualified = self.qualified_names(value)
            sole = len(node.bases) + len(node.keywords) == 1 and not isinstance(base, ast.Starred)
            base_names.extend(sorted(qualified) or [self.code(value, sole)])
        self.classes.append(
            ClassInfo(
                name=node.name,
                path=self.path,
                base_names=tuple(base_names),
                is_lightning_module=any(n in names.LIGHTNING_MODULE_CLASSES for n in base_names),
            )
        )
        self.class_stack.append(node.name)
        for child in (*node.decorator_list, *sorted_by_position([*node.bases, *node.keywords])):
            self.visit(child)
        self.in_scope(node, node.body)
        self.class_stack.pop()
        if node.name in self.unscaled_classes:
            index = max(i for i, info in enumerate(self.classes) if info.name == node.name)
            self.classes[index] = replace(self.classes[index], clips_unscaled=True)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        is_helper = node.name in UNSCALE_HELPERS and not self.class_stack
        if node.name == names.GUARD_HELPER and not self.class_stack:
            self.has_guard_helper = True
        if is_helper:
            self.guard_depth += 1  # the helpers' own calls of Lightning's clipping are no sites
        if (
            self.class_stack
            and node.name == "configure_gradient_clipping"
            and mentions(node, names.MODULE_UNSCALE_HELPER)
        ):
            self.unscaled_classes.add(self.class_stack[-1])
        for child in (*node.decorator_list, *argument_children(node.args), node.returns):
            if child is not None:
                self.visit(child)
        self.function_stack.append(node)
        self.in_scope(node, node.body)
        self.function_stack.pop()
        if is_helper:
            self.guard_depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for child in argument_children(node.args):
            self.visit(child)
        self.in_scope(node, [node.body])

    def visit_comprehension_node(self, node: ast.AST) -> None:
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        first_iter = generators[0].iter
        outer, inner = self.scope, self.scopes[id(node)]
        self.scope = inner
        for child in source_order_children(node):
            if child is first_iter:
                self.scope = outer
                self.visit(child)
                self.scope = inner
            elif isinstance(child, ast.comprehension):
                for part in (child.target, child.iter, *child.ifs):
                    self.scope = outer if part is first_iter else inner
                    self.visit(part)
                self.scope = inner
            else:
                self.visit(child)
        self.scope = outer

    def visit_If(self, node: ast.If) -> None:
        guarded = self.is_guard_test(node.test)
        self.guard_depth += guarded
        self.generic_visit(node)
        self.guard_depth -= guarded

    def is_guard_test(self, test: ast.AST) -> bool:
        """A clip call already wrapped by the guard fix is no longer a site."""
        return (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == names.GUARD_HELPER
        )

    def visit_Expr(self, node: ast.Expr) -> None:
        self.note_statement_call(node)
        self.generic_visit(node)

    def note_statement_call(self, node: ast.stmt) -> None:
        call = clip_call_of(node)
        if call is not None:
            self.statement_calls[id(call)] = node

    def visit_Assign(self, node: ast.Assign) -> None:
        self.note_statement_call(node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.note_statement_call(node)
        self.generic_visit(node)

    def entry_of(self, call: ast.Call) -> EntryId:
        """The id of a Fabric(...) / Trainer(...) call: its path and position."""
        span = self.span(call)
        return EntryId(self.path, span.line, span.column)


VISITORS: dict[type, Callable[[CollectorBase, Any], None]] = {}


def visitor_of(
    collector: type[CollectorBase], node_type: type
) -> Callable[[CollectorBase, Any], None]:
    """The visit method for a node type, looked up once per type instead of once per node."""
    method: Callable[[CollectorBase, Any], None] = getattr(
        collector, f"visit_{node_type.__name__}", collector.generic_visit
    )
    return method


# -- source order ------------------------------------------------------------------------------


def sorted_by_position(nodes: list) -> list:
    return sorted(nodes, key=lambda node: (node.lineno, node.col_offset))


def argument_children(args: ast.arguments) -> list[ast.AST]:
    """Annotations and defaults in the order they are written (`x: int = 1`)."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    children: list[ast.AST | None] = []
    for arg, default in zip(positional, defaults):
        children += [arg.annotation, default]
    children.append(args.vararg.annotation if args.vararg else None)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        children += [arg.annotation, default]
    children.append(args.kwarg.annotation if args.kwarg else None)
    return [child for child in children if child is not None]


def source_order_children(node: ast.AST) -> list[ast.AST]:
    """Children in the order they are written, where ast's field order differs."""
    if isinstance(node, ast.Call):
        return [node.func, *sorted_by_position([*node.args, *node.keywords])]
    if isinstance(node, ast.Dict):
        children: list[ast.AST] = []
        for key, value in zip(node.keys, node.values):
            children += [value] if key is None else [key, value]
        return children
    if isinstance(node, ast.IfExp):
        return [node.body, node.test, node.orelse]
    return child_nodes(node)


def mentions(node: ast.AST, name: str) -> bool:
    """Any name in `node` spelled `name` (libcst's `findall(node, Name(name))`)."""
    for child in walk(node):
        if (
            (isinstance(child, ast.Name) and child.id == name)
            or (isinstance(child, ast.Attribute) and child.attr == name)
            or (isinstance(child, ast.keyword) and child.arg == name)
            or (isinstance(child, ast.arg) and child.arg == name)
            or (isinstance(child, (*FUNCTIONS, ast.ClassDef)) and child.name == name)
            or (isinstance(child, ast.alias) and name in (*child.name.split("."), child.asname))
        ):
            return True
    return False
