"""Read one module's sites that take part in the clipping failure, with the stdlib `ast`.

Names are resolved by scope (analysis/scopes.py gives the qualified names libcst's
QualifiedNameProvider gave), never by text, so aliases and `from ... import ... as` forms are
recognised and look-alikes (`numpy`, `torchmetrics`) are not. Reading with `ast` keeps a check
run free of libcst: only files a fix changes are parsed with it. Linking sites into findings
happens later, per project (see `link.py`).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import (
    SourceText,
    clip_call_of,
    has_guard_optimizer,
    is_sole_argument,
    keyword_arg,
    literal_value,
    positional_args,
    positional_or_keyword,
    star_kwargs,
    string_token_count,
)
from amp_clipfix.analysis.nodes import child_nodes, walk
from amp_clipfix.analysis.scopes import (
    Binding,
    Scope,
    build_scopes,
    dotted_names,
    full_name,
    position,
    referents,
)
from amp_clipfix.analysis.suppression import suppressed_codes
from amp_clipfix.models import (
    Certainty,
    ClassInfo,
    EntryId,
    FileSites,
    Sharding,
    Site,
    SiteKind,
    Span,
    Through,
)

UNSCALE_HELPERS = (names.FABRIC_UNSCALE_HELPER, names.MODULE_UNSCALE_HELPER)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
DEEPEST = 20_000  # Python-level recursion only (3.11 keeps no C frames for it)


PRECISIONS = (SiteKind.FABRIC_PRECISION, SiteKind.TRAINER_PRECISION)


def collect_sites(path: Path, text: str, tree: ast.Module | None = None) -> FileSites:
    """Collect the sites of one module (`tree` is `ast.parse(text)` when already at hand)."""
    if tree is None:
        tree = ast.parse(text)
    source = SourceText(text, tree)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEPEST))  # the visitor recurses once per nesting level
    try:
        collector = SiteCollector(path, source, tree)
        collector.visit(tree)
    finally:
        sys.setrecursionlimit(limit)
    sites = collector.sites
    if sites:
        suppressions = comment_suppressions(source, tree)
        sites = [with_suppressions(site, suppressions) for site in sites]
    return FileSites(
        path=path,
        sites=tuple(sites),
        classes=tuple(collector.classes),
        has_guard_helper=collector.has_guard_helper,
    )


def with_suppressions(site: Site, suppressions: dict[int, frozenset[str]]) -> Site:
    lines = range(site.span.line, site.span.end_line + 1)
    codes = frozenset().union(*(suppressions.get(line, ()) for line in lines))
    return replace(site, suppressed_codes=codes) if codes else site


def comment_suppressions(source: SourceText, tree: ast.Module) -> dict[int, frozenset[str]]:
    """Line -> codes its comment silences. `ast` keeps no comments: a line is read only when
    the text from its first `#` could silence something, and then from the first `#` that is
    not inside a string literal."""
    candidates: dict[int, str] = {}
    for number in range(1, len(source.line_starts) + 1):
        line = source.line(number)
        first = line.find("#")
        if first >= 0 and suppressed_codes(line[first:]):
            candidates[number] = line
    if not candidates:
        return {}
    strings = string_extents(tree, set(candidates))
    suppressions: dict[int, frozenset[str]] = {}
    for number, line in candidates.items():
        for column, char in enumerate(line):
            if char == "#" and not in_string(strings, number, len(line[:column].encode())):
                codes = suppressed_codes(line[column:])
                if codes:
                    suppressions[number] = codes
                break
    return suppressions


Extent = tuple[tuple[int, int], tuple[int, int]]


def string_extents(tree: ast.Module, lines: set[int]) -> list[Extent]:
    extents = []
    for node in walk(tree):
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
        ):
            end_line = node.end_lineno or node.lineno
            if any(line in lines for line in range(node.lineno, end_line + 1)):
                extents.append(
                    ((node.lineno, node.col_offset), (end_line, node.end_col_offset or 0))
                )
    return extents


def in_string(extents: list[Extent], line: int, byte_column: int) -> bool:
    return any(start <= (line, byte_column) < end for start, end in extents)


def is_clip_positive(value: str | None) -> bool:
    """`gradient_clip_val` clips only when it is a number above zero (None and 0 do not)."""
    try:
        return value is not None and float(value) > 0
    except ValueError:
        return False


def is_hook_clip_argument(value: ast.expr | None, function: ast.AST | None) -> bool:
    """A clip value that is a parameter of the `configure_gradient_clipping` hook it is passed
    in: Lightning calls the hook with the Trainer's `gradient_clip_val`, so passing it on to
    `self.clip_gradients` or `super().configure_gradient_clipping` clips with the Trainer's."""
    if not isinstance(value, ast.Name) or not isinstance(function, FUNCTIONS):
        return False
    if function.name != "configure_gradient_clipping":
        return False
    arguments = function.args
    parameters = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return value.id in {parameter.arg for parameter in parameters}


class SiteCollector(ast.NodeVisitor):
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
        # Receivers known to be a Fabric -> the Fabric(...) call bound to them (None: unknown)
        self.fabric_bindings: dict[str, EntryId | None] = {}
        self.guard_depth = 0
        self.entry_calls: list[EntryId] = []  # Fabric(...) / Trainer(...) calls being visited
        self.entry_sharding: dict[EntryId, Sharding] = {}  # their `strategy=`, as a fact
        # Filled while visiting (what libcst saw so far): target name -> value and its scope
        self.assigned_values: dict[int, tuple[ast.expr, Scope]] = {}
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

    def annotation_string_names(self, node: ast.Constant) -> set[str]:
        """libcst reads a string annotation as code: the names in it resolve where it is."""
        try:
            parsed = ast.parse(str(node.value))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return set()
        found: set[str] = set()
        inner: set[int] = set()
        for child in walk(parsed):
            if isinstance(child, ast.Attribute) and id(child) not in inner:
                chain = list(dotted_names(child))
                inner.update(id(part) for _, part in chain)
                accessed = next((dotted for dotted, _ in chain if dotted in self.scope), None)
                if accessed is None and chain:
                    accessed = chain[-1][0]
                if accessed is not None:
                    found |= self.access_names(accessed, position(node))
            elif (
                isinstance(child, ast.Name)
                and id(child) not in inner
                and isinstance(child.ctx, ast.Load)
            ):
                found |= self.access_names(child.id, position(node))
        return found

    def access_names(self, name: str, at: tuple[int, int]) -> set[str]:
        return {
            qualified
            for binding in referents(self.scope, name, at)
            for qualified in binding.qualified_names(binding.name)
        }

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
        for param in (*node.args.args, *node.args.kwonlyargs):
            if param.annotation is not None and self.is_fabric_annotation(param.annotation):
                self.bind_fabric(param.arg, None)
        for child in (*node.decorator_list, *argument_children(node.args), node.returns):
            if child is not None:
                self.visit(child)
        self.function_stack.append(node)
        self.in_scope(node, node.body)
        self.function_stack.pop()
        if is_helper:
            self.guard_depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

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

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_comprehension_node
    visit_DictComp = visit_comprehension_node

    def is_fabric_annotation(self, annotation: ast.AST) -> bool:
        """`fabric: Fabric`, `fabric: L.Fabric`, also as a string (`"Fabric"`, `Optional[...]`)."""
        is_string = isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)
        qualified = (
            self.annotation_string_names(annotation)  # type: ignore[arg-type]
            if is_string
            else self.qualified_names(annotation)
        )
        if qualified & names.FABRIC_CLASSES:
            return True
        if is_string:
            if string_token_count(self.code(annotation)) != 1:
                return False
            text = literal_value(annotation, self.source) or ""
            return text.rsplit(".", 1)[-1].strip() == "Fabric"
        if isinstance(annotation, ast.Subscript):
            return any(
                self.is_fabric_annotation(element)
                for element in subscript_elements(annotation, self.source)
            )
        return False

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
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.assigned_values[id(node.targets[0])] = (node.value, self.scope)
        if isinstance(node.value, ast.Call) and self.qualified_names(node.value.func) & (
            names.FABRIC_CLASSES
        ):
            for target in node.targets:
                self.bind_fabric(self.code(target), self.entry_of(node.value))
        elif isinstance(node.value, (ast.Name, ast.Attribute)):
            source = self.code(node.value)
            if source in self.fabric_bindings:  # `self.fab = fabric`
                for target in node.targets:
                    self.bind_fabric(self.code(target), self.fabric_bindings[source])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.note_statement_call(node)
        if isinstance(node.target, ast.Name) and node.value is not None:
            self.assigned_values[id(node.target)] = (node.value, self.scope)
        value = node.value
        if isinstance(value, ast.Call) and self.qualified_names(value.func) & names.FABRIC_CLASSES:
            self.bind_fabric(self.code(node.target), self.entry_of(value))
        elif self.is_fabric_annotation(node.annotation):
            self.bind_fabric(self.code(node.target), None)
        self.generic_visit(node)

    def entry_of(self, call: ast.Call) -> EntryId:
        """The id of a Fabric(...) / Trainer(...) call: its path and position."""
        span = self.span(call)
        return EntryId(self.path, span.line, span.column)

    def bind_fabric(self, receiver: str, call: EntryId | None) -> None:
        """Remember which Fabric a name holds; a name bound to two Fabrics could be either."""
        if receiver in self.fabric_bindings and self.fabric_bindings[receiver] != call:
            call = None
        self.fabric_bindings[receiver] = call

    # -- calls ---------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        entries = len(self.entry_calls)
        self.collect_call(node)
        self.generic_visit(node)
        del self.entry_calls[entries:]

    def collect_call(self, node: ast.Call) -> None:
        qualified = self.qualified_names(node.func)
        if qualified & names.FABRIC_CLASSES:
            self.entry_calls.append(self.entry_of(node))
            self.collect_entry_point(node, SiteKind.FABRIC_PRECISION, clip_kind=None)
        elif qualified & names.TRAINER_CLASSES:
            self.entry_calls.append(self.entry_of(node))
            self.collect_entry_point(node, SiteKind.TRAINER_PRECISION, SiteKind.TRAINER_CLIP)
        elif qualified & names.FUSABLE_OPTIMIZERS:
            self.collect_fused(node, self.code(node.func))
        elif qualified & names.PARTIAL_FUNCTIONS:
            self.collect_partial(node)
        else:
            for qualified_name in qualified:
                plugin = names.plugin_scaler_index(qualified_name)
                if plugin is not None:
                    self.collect_plugin(node, plugin[0])
                    break
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "clip_gradients":
            self.collect_clip(node)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "configure_gradient_clipping"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
            and self.class_stack
        ):
            self.collect_super_clipping(node)

    def collect_entry_point(
        self, call: ast.Call, precision_kind: SiteKind, clip_kind: SiteKind | None
    ) -> None:
        """Fabric(...) or Trainer(...): the precision argument, the clip value, `**spreads`."""
        name = self.code(call.func)
        spreads = star_kwargs(call)
        self.entry_sharding[self.entry_calls[-1]] = self.strategy_sharding(call, bool(spreads))
        plugins = keyword_arg(call, "plugins")
        if plugins is not None:
            self.link_plugins(plugins.value, self.entry_calls[-1])
        precision = keyword_arg(call, "precision")
        if precision is not None:
            detail = f"{name}(precision={self.code(precision.value)})"
            self.add_value(precision_kind, precision.value, detail, names.is_mixed_precision)
        elif keyword_arg(call, "plugins") is None:
            for spread in spreads:
                detail = f"{name}({self.argument_code(spread)}) may set precision"
                self.add(
                    precision_kind,
                    spread,
                    Certainty.RUNTIME,
                    detail,
                    fixable=False,
                    through=Through.SPREAD,
                )
        if clip_kind is None:
            return
        clip = keyword_arg(call, "gradient_clip_val")
        if clip is not None:
            detail = f"{name}(gradient_clip_val={self.code(clip.value)})"
            self.add_value(clip_kind, clip.value, detail, is_clip_positive, fixable=False)
        else:
            for spread in spreads:
                detail = f"{name}({self.argument_code(spread)}) may set gradient_clip_val"
                self.add(
                    clip_kind,
                    spread,
                    Certainty.RUNTIME,
                    detail,
                    fixable=False,
                    through=Through.SPREAD,
                )

    def link_plugins(self, plugins: ast.expr, entry: EntryId) -> None:
        """`plugins=plugin` / `plugins=[plugin, ...]` where `plugin` names a precision plugin
        built before: that plugin's site configures this call (its precision, its strategy)."""
        elements = plugins.elts if isinstance(plugins, (ast.List, ast.Tuple)) else [plugins]
        for element in elements:
            if not isinstance(element, ast.Name):
                continue
            assigned = self.single_assigned_value(element, self.scope)
            if assigned is None or not isinstance(assigned[0], ast.Call):
                continue
            span = self.span(assigned[0])
            for index, site in enumerate(self.sites):
                if site.span != span or site.entry is not None or site.kind not in PRECISIONS:
                    continue
                sharding = site.sharding
                if sharding is Sharding.NONE:
                    sharding = self.entry_sharding.get(entry, Sharding.NONE)
                self.sites[index] = replace(site, entry=entry, sharding=sharding)

    def strategy_sharding(self, call: ast.Call, spreads: bool) -> Sharding:
        """The `strategy=` of a Fabric / Trainer call: a registered name or one of Lightning's
        strategy classes is known; anything else (a variable, a spread, a project class) is
        decided at run time."""
        strategy = keyword_arg(call, "strategy")
        if strategy is None:
            return Sharding.UNKNOWN if spreads else Sharding.NONE
        node = strategy.value
        shards: bool | None = None
        if isinstance(node, ast.Call):
            shards = names.strategy_class_shards(self.qualified_names(node.func))
        else:
            _, value = self.resolve_literal(node)
            if value is not None:
                shards = names.strategy_name_shards(value)
        if shards is None:
            return Sharding.UNKNOWN
        return Sharding.SHARDED if shards else Sharding.NONE

    def add_value(
        self,
        kind: SiteKind,
        node: ast.expr,
        detail: str,
        counts: Callable[[str], bool],
        fixable: bool = True,
    ) -> None:
        """A site for an argument value: known when it is a literal (or a name bound once to
        one, reported at that literal), decided at run time otherwise; literals that do not
        take part in the failure (`"32-true"`, `0`) are no site."""
        literal_node, value = self.resolve_literal(node)
        if value is None:
            self.add(kind, node, Certainty.RUNTIME, detail, fixable=False)
        elif counts(value):
            self.add(kind, literal_node, Certainty.KNOWN, detail, value, fixable=fixable)

    def resolve_literal(
        self, node: ast.expr, scope: Scope | None = None
    ) -> tuple[ast.expr, str | None]:
        """The literal behind `node`: itself, or the value of a name bound once to a literal
        (a module constant such as `PRECISION = "16-mixed"`)."""
        value = literal_value(node, self.source)
        if value is None and isinstance(node, ast.Name):
            assigned = self.single_assigned_value(node, scope or self.scope)
            if assigned is not None:
                literal = literal_value(assigned[0], self.source)
                if literal is not None:
                    return assigned[0], literal
        return node, value

    def collect_plugin(self, call: ast.Call, side: str) -> None:
        kind = SiteKind.FABRIC_PRECISION if side == "fabric" else SiteKind.TRAINER_PRECISION
        precision = positional_or_keyword(call, 0, "precision")
        if precision is None:
            return
        _, value = self.resolve_literal(precision)
        code = self.code(precision, is_sole_argument(call, precision))
        detail = f"{self.code(call.func)}({code}, ...)"
        qualified = self.qualified_names(call.func)
        sharded = any(name.rsplit(".", 1)[-1] in names.SHARDED_PLUGINS for name in qualified)
        sharding = Sharding.SHARDED if sharded else None
        if value is None:
            self.add(kind, call, Certainty.RUNTIME, detail, fixable=False, sharding=sharding)
        elif names.is_mixed_precision(value):
            self.add(kind, call, Certainty.KNOWN, detail, value, sharding=sharding)

    def collect_partial(self, call: ast.Call) -> None:
        positional = positional_args(call)
        if positional and self.qualified_names(positional[0]) & names.FUSABLE_OPTIMIZERS:
            code = self.code(positional[0], is_sole_argument(call, positional[0]))
            self.collect_fused(call, f"partial({code})")

    def collect_fused(self, call: ast.Call, name: str) -> None:
        """`fused=` written in the call, or inside a `**dict(...)` / `**{...}` spread."""
        fused = keyword_arg(call, "fused")
        if fused is not None:
            self.add_fused_value(fused.value, f"{name}(fused={self.code(fused.value)})", False)
            return
        for spread in star_kwargs(call):
            spread_code = self.argument_code(spread)
            for value, scope, conditional in self.fused_in_spread(spread.value, self.scope, False):
                detail = f"{name}({spread_code}) with fused={self.code(value)}"
                self.add_fused_value(value, detail, conditional, scope, Through.SPREAD_ENTRY)

    def add_fused_value(
        self,
        value: ast.expr,
        detail: str,
        conditional: bool,
        scope: Scope | None = None,
        through: Through = Through.ARGUMENT,
    ) -> None:
        value, literal = self.resolve_literal(value, scope)
        kind = SiteKind.FUSED_OPTIMIZER
        if literal == "True":
            certainty = Certainty.RUNTIME if conditional else Certainty.KNOWN
            self.add(kind, value, certainty, detail, literal, through=through)
        elif literal is None:
            self.add(kind, value, Certainty.RUNTIME, detail, fixable=False, through=through)

    def fused_in_spread(
        self, node: ast.expr, scope: Scope, conditional: bool, depth: int = 0
    ) -> Iterator[tuple[ast.expr, Scope, bool]]:
        """The `fused` values a `**spread` can carry, and whether a condition picks them."""
        if depth > 4:
            return
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if (
                    key is not None
                    and isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and literal_value(key, self.source) == "fused"
                ):
                    yield value, scope, conditional
        elif isinstance(node, ast.Call) and self.qualified_names(node.func, scope) & (
            names.DICT_CONSTRUCTORS
        ):
            fused = keyword_arg(node, "fused")
            if fused is not None:
                yield fused.value, scope, conditional
        elif isinstance(node, ast.IfExp):
            yield from self.fused_in_spread(node.body, scope, True, depth + 1)
            yield from self.fused_in_spread(node.orelse, scope, True, depth + 1)
        elif isinstance(node, ast.Name):
            assigned = self.single_assigned_value(node, scope)
            if assigned is not None:
                yield from self.fused_in_spread(*assigned, conditional, depth + 1)

    def single_assigned_value(self, name: ast.Name, scope: Scope) -> tuple[ast.expr, Scope] | None:
        """The value of `name` (and the scope it is read in) when it is bound exactly once,
        by a plain assignment already visited, in the scope `name` resolves to."""
        assignments = [b for b in scope.resolve(name.id) if isinstance(b, Binding)]
        if len(assignments) != 1:
            return None
        target = assignments[0].node
        return self.assigned_values.get(id(target)) if isinstance(target, ast.Name) else None

    def collect_clip(self, call: ast.Call) -> None:
        if self.guard_depth:
            return
        receiver = call.func.value  # type: ignore[attr-defined]
        receiver_code = self.code(receiver)
        last_name = receiver_code.rsplit(".", 1)[-1].lower()
        if receiver_code == "self" and self.class_stack:
            clip = positional_or_keyword(call, 1, "gradient_clip_val")
            value = None if clip is None else self.resolve_literal(clip)[1]
            if value is not None and not is_clip_positive(value):
                return
            certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
            kind = SiteKind.MODULE_CLIP
        elif receiver_code in self.fabric_bindings:
            kind, certainty, value = SiteKind.FABRIC_CLIP, Certainty.KNOWN, None
        elif "fabric" in last_name:
            # A name alone is no fact: the project resolution follows the receiver's value
            # (a Fabric: certain; a module or another object: no clip; else a review).
            kind, certainty, value = SiteKind.FABRIC_CLIP, Certainty.RUNTIME, None
        else:
            return
        detail = f"{self.code(call.func)}(...)"
        self.add(kind, call, certainty, detail, value, fixable=self.is_guardable(call))
        self.sites[-1] = replace(self.sites[-1], clip_call=True)
        if kind is SiteKind.FABRIC_CLIP:
            # The clip belongs to the Fabric its receiver holds, when that is known.
            bound = self.fabric_bindings.get(receiver_code)
            sharding = self.entry_sharding.get(bound, Sharding.NONE) if bound else Sharding.NONE
            self.sites[-1] = replace(self.sites[-1], entry=bound, sharding=sharding)

    def collect_super_clipping(self, call: ast.Call) -> None:
        """`super().configure_gradient_clipping(optimizer, gradient_clip_val=...)` clips with
        the value it passes; passing the hook's own parameter on leaves it to the Trainer."""
        if self.guard_depth:
            return
        clip = positional_or_keyword(call, 1, "gradient_clip_val")
        function = self.function_stack[-1] if self.function_stack else None
        if clip is None or is_hook_clip_argument(clip, function):
            return
        value = self.resolve_literal(clip)[1]
        if value is not None and not is_clip_positive(value):
            return
        certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
        detail = f"{self.code(call.func)}(gradient_clip_val={self.code(clip)})"
        self.add(SiteKind.MODULE_CLIP, call, certainty, detail, value, fixable=False)

    def is_guardable(self, call: ast.Call) -> bool:
        """The guard fix wraps a whole statement line that only calls or assigns the clip."""
        statement = self.statement_calls.get(id(call))
        if statement is None or not self.source.alone_on_line(statement):
            return False
        if isinstance(statement, ast.Assign) and not all(
            isinstance(target, (ast.Name, ast.Attribute, ast.Subscript))
            for target in statement.targets
        ):
            return False
        return has_guard_optimizer(call)


VISITORS: dict[type, Callable[[SiteCollector, Any], None]] = {}


def visitor_of(
    collector: type[SiteCollector], node_type: type
) -> Callable[[SiteCollector, Any], None]:
    """The visit method for a node type, looked up once per type instead of once per node."""
    method: Callable[[SiteCollector, Any], None] = getattr(
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


def subscript_elements(node: ast.Subscript, source: SourceText) -> list[ast.AST]:
    """The elements libcst sees in `X[a, b]` (a parenthesised tuple is one element)."""
    index = node.slice
    if isinstance(index, ast.Tuple) and not source.code(index).startswith("("):
        elements = index.elts
    else:
        elements = [index]
    return [element for element in elements if not isinstance(element, ast.Slice)]


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
