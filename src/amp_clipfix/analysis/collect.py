"""Parse one file and collect the sites that take part in the clipping failure.

Names are resolved with libcst's QualifiedNameProvider, never by text, so aliases and
`from ... import ... as` forms are recognised and look-alikes (`numpy`, `torchmetrics`) are not.
Linking sites into findings happens later, per project (see `link.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from amp_clipfix.analysis import names
from amp_clipfix.analysis.suppression import suppressed_codes
from amp_clipfix.analysis.syntax import (
    clip_call_of,
    guard_test,
    keyword_arg,
    literal_value,
    positional_or_keyword,
    star_kwargs,
)
from amp_clipfix.models import Certainty, ClassInfo, FileSites, Site, SiteKind, Span

UNSCALE_HELPERS = (names.FABRIC_UNSCALE_HELPER, names.MODULE_UNSCALE_HELPER)


def collect_sites(path: Path, module: cst.Module) -> FileSites:
    """Collect the sites of one parsed module."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = SiteCollector(path)
    wrapper.visit(collector)
    sites = []
    for site in collector.sites:
        codes = frozenset().union(
            *(
                collector.suppressions.get(line, ())
                for line in range(site.span.line, site.span.end_line + 1)
            )
        )
        sites.append(replace(site, suppressed_codes=codes) if codes else site)
    return FileSites(
        path=path,
        sites=tuple(sites),
        classes=tuple(collector.classes),
        has_guard_helper=collector.has_guard_helper,
    )


def is_clip_positive(value: str | None) -> bool:
    """`gradient_clip_val` clips only when it is a number above zero (None and 0 do not)."""
    try:
        return value is not None and float(value) > 0
    except ValueError:
        return False


class SiteCollector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (
        PositionProvider,
        QualifiedNameProvider,
        ScopeProvider,
    )

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.sites: list[Site] = []
        self.classes: list[ClassInfo] = []
        self.has_guard_helper = False
        self.class_stack: list[str] = []
        self.unscaled_classes: set[str] = set()  # classes whose clipping the unscale fix made
        # Receivers known to be a Fabric -> the Fabric(...) call bound to them (None: unknown)
        self.fabric_bindings: dict[str, str | None] = {}
        self.guard_depth = 0
        self.entry_calls: list[str] = []  # Fabric(...) / Trainer(...) calls being visited
        self.suppressions: dict[int, frozenset[str]] = {}  # line -> codes silenced there
        # Filled while visiting, so that no parent-node metadata is needed:
        self.assigned_values: dict[cst.Name, cst.BaseExpression] = {}  # target name -> value
        self.statement_calls: dict[cst.Call, cst.BaseSmallStatement] = {}  # whole-line calls

    # -- helpers -------------------------------------------------------------------------------

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        return {qn.name for qn in self.get_metadata(QualifiedNameProvider, node, set())}

    def span(self, node: cst.CSTNode) -> Span:
        code_range = self.get_metadata(PositionProvider, node)
        return Span(
            code_range.start.line,
            code_range.start.column,
            code_range.end.line,
            code_range.end.column,
        )

    def code(self, node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def add(
        self,
        kind: SiteKind,
        node: cst.CSTNode,
        certainty: Certainty,
        detail: str,
        value: str | None = None,
        fixable: bool = True,
    ) -> None:
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
                entry=self.entry_calls[-1] if self.entry_calls else None,
            )
        )

    # -- structure -----------------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        base_names: list[str] = []
        for base in node.bases:
            if base.keyword is not None:
                continue
            qualified = self.qualified_names(base.value)
            base_names.extend(sorted(qualified) or [self.code(base.value)])
        self.classes.append(
            ClassInfo(
                name=node.name.value,
                path=self.path,
                base_names=tuple(base_names),
                is_lightning_module=any(n in names.LIGHTNING_MODULE_CLASSES for n in base_names),
            )
        )
        self.class_stack.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        name = self.class_stack.pop()
        if name in self.unscaled_classes:
            index = max(i for i, info in enumerate(self.classes) if info.name == name)
            self.classes[index] = replace(self.classes[index], clips_unscaled=True)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == names.GUARD_HELPER and not self.class_stack:
            self.has_guard_helper = True
        if node.name.value in UNSCALE_HELPERS and not self.class_stack:
            self.guard_depth += 1  # the helpers' own calls of Lightning's clipping are no sites
        if (
            self.class_stack
            and node.name.value == "configure_gradient_clipping"
            and m.findall(node, m.Name(names.MODULE_UNSCALE_HELPER))
        ):
            self.unscaled_classes.add(self.class_stack[-1])
        for param in (*node.params.params, *node.params.kwonly_params):
            annotation = param.annotation
            if annotation is not None and self.is_fabric_annotation(annotation.annotation):
                self.bind_fabric(param.name.value, None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if original_node.name.value in UNSCALE_HELPERS and not self.class_stack:
            self.guard_depth -= 1

    def is_fabric_annotation(self, annotation: cst.BaseExpression) -> bool:
        """`fabric: Fabric`, `fabric: L.Fabric`, also as a string (`"Fabric"`, `Optional[...]`)."""
        if self.qualified_names(annotation) & names.FABRIC_CLASSES:
            return True
        if isinstance(annotation, cst.SimpleString):
            text = literal_value(annotation) or ""
            return text.rsplit(".", 1)[-1].strip() == "Fabric"
        if isinstance(annotation, cst.Subscript):
            return any(
                isinstance(element.slice, cst.Index)
                and self.is_fabric_annotation(element.slice.value)
                for element in annotation.slice
            )
        return False

    def visit_Comment(self, node: cst.Comment) -> None:
        codes = suppressed_codes(node.value)
        if codes:
            line = self.get_metadata(PositionProvider, node).start.line
            self.suppressions[line] = self.suppressions.get(line, frozenset()) | codes

    def visit_If(self, node: cst.If) -> None:
        if self.is_guard_test(node.test):
            self.guard_depth += 1

    def leave_If(self, original_node: cst.If) -> None:
        if self.is_guard_test(original_node.test):
            self.guard_depth -= 1

    def is_guard_test(self, test: cst.BaseExpression) -> bool:
        """A clip call already wrapped by the guard fix is no longer a site."""
        return (
            isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == names.GUARD_HELPER
        )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1:
            call = clip_call_of(node.body[0])
            if call is not None:
                self.statement_calls[call] = node.body[0]

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.assigned_values[node.targets[0].target] = node.value
        if isinstance(node.value, cst.Call) and self.qualified_names(node.value.func) & (
            names.FABRIC_CLASSES
        ):
            for target in node.targets:
                self.bind_fabric(self.code(target.target), self.entry_of(node.value))
        elif isinstance(node.value, (cst.Name, cst.Attribute)):
            source = self.code(node.value)
            if source in self.fabric_bindings:  # `self.fab = fabric`
                for target in node.targets:
                    self.bind_fabric(self.code(target.target), self.fabric_bindings[source])

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self.assigned_values[node.target] = node.value
        value = node.value
        if isinstance(value, cst.Call) and self.qualified_names(value.func) & names.FABRIC_CLASSES:
            self.bind_fabric(self.code(node.target), self.entry_of(value))
        elif self.is_fabric_annotation(node.annotation.annotation):
            self.bind_fabric(self.code(node.target), None)

    def entry_of(self, call: cst.Call) -> str:
        """The id of a Fabric(...) / Trainer(...) call: its path and position."""
        start = self.get_metadata(PositionProvider, call).start
        return f"{self.path}:{start.line}:{start.column}"

    def bind_fabric(self, receiver: str, call: str | None) -> None:
        """Remember which Fabric a name holds; a name bound to two Fabrics could be either."""
        if receiver in self.fabric_bindings and self.fabric_bindings[receiver] != call:
            call = None
        self.fabric_bindings[receiver] = call

    # -- calls ---------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
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
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "clip_gradients":
            self.collect_clip(node)
        elif (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "configure_gradient_clipping"
            and isinstance(node.func.value, cst.Call)
            and isinstance(node.func.value.func, cst.Name)
            and node.func.value.func.value == "super"
            and self.class_stack
        ):
            self.collect_super_clipping(node)

    def leave_Call(self, original_node: cst.Call) -> None:
        if self.entry_calls and self.entry_calls[-1] == self.entry_of(original_node):
            self.entry_calls.pop()

    def collect_entry_point(
        self, call: cst.Call, precision_kind: SiteKind, clip_kind: SiteKind | None
    ) -> None:
        """Fabric(...) or Trainer(...): the precision argument, the clip value, `**spreads`."""
        name = self.code(call.func)
        spreads = star_kwargs(call)
        precision = keyword_arg(call, "precision")
        if precision is not None:
            detail = f"{name}(precision={self.code(precision.value)})"
            self.add_value(precision_kind, precision.value, detail, names.is_mixed_precision)
        elif keyword_arg(call, "plugins") is None:
            for spread in spreads:
                detail = f"{name}({self.code(spread)}) may set precision"
                self.add(precision_kind, spread, Certainty.RUNTIME, detail, fixable=False)
        if clip_kind is None:
            return
        clip = keyword_arg(call, "gradient_clip_val")
        if clip is not None:
            detail = f"{name}(gradient_clip_val={self.code(clip.value)})"
            self.add_value(clip_kind, clip.value, detail, is_clip_positive, fixable=False)
        else:
            for spread in spreads:
                detail = f"{name}({self.code(spread)}) may set gradient_clip_val"
                self.add(clip_kind, spread, Certainty.RUNTIME, detail, fixable=False)

    def add_value(
        self,
        kind: SiteKind,
        node: cst.BaseExpression,
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

    def resolve_literal(self, node: cst.BaseExpression) -> tuple[cst.BaseExpression, str | None]:
        """The literal behind `node`: itself, or the value of a name bound once to a literal
        (a module constant such as `PRECISION = "16-mixed"`)."""
        value = literal_value(node)
        if value is None and isinstance(node, cst.Name):
            assigned = self.single_assigned_value(node)
            if assigned is not None and literal_value(assigned) is not None:
                return assigned, literal_value(assigned)
        return node, value

    def collect_plugin(self, call: cst.Call, side: str) -> None:
        kind = SiteKind.FABRIC_PRECISION if side == "fabric" else SiteKind.TRAINER_PRECISION
        precision = positional_or_keyword(call, 0, "precision")
        if precision is None:
            return
        _, value = self.resolve_literal(precision.value)
        detail = f"{self.code(call.func)}({self.code(precision.value)}, ...)"
        if value is None:
            self.add(kind, call, Certainty.RUNTIME, detail, fixable=False)
        elif names.is_mixed_precision(value):
            self.add(kind, call, Certainty.KNOWN, detail, value)

    def collect_partial(self, call: cst.Call) -> None:
        positional = [arg for arg in call.args if arg.keyword is None and arg.star == ""]
        if positional and self.qualified_names(positional[0].value) & names.FUSABLE_OPTIMIZERS:
            self.collect_fused(call, f"partial({self.code(positional[0].value)})")

    def collect_fused(self, call: cst.Call, name: str) -> None:
        """`fused=` written in the call, or inside a `**dict(...)` / `**{...}` spread."""
        fused = keyword_arg(call, "fused")
        if fused is not None:
            self.add_fused_value(fused.value, f"{name}(fused={self.code(fused.value)})", False)
            return
        for spread in star_kwargs(call):
            for value, conditional in self.fused_in_spread(spread.value, conditional=False):
                self.add_fused_value(
                    value, f"{name}({self.code(spread)}) with fused={self.code(value)}", conditional
                )

    def add_fused_value(self, value: cst.BaseExpression, detail: str, conditional: bool) -> None:
        value, literal = self.resolve_literal(value)
        if literal == "True":
            certainty = Certainty.RUNTIME if conditional else Certainty.KNOWN
            self.add(SiteKind.FUSED_OPTIMIZER, value, certainty, detail, literal)
        elif literal is None:
            self.add(SiteKind.FUSED_OPTIMIZER, value, Certainty.RUNTIME, detail, fixable=False)

    def fused_in_spread(
        self, node: cst.BaseExpression, conditional: bool, depth: int = 0
    ) -> Iterator[tuple[cst.BaseExpression, bool]]:
        """The `fused` values a `**spread` can carry, and whether a condition picks them."""
        if depth > 4:
            return
        if isinstance(node, cst.Dict):
            for element in node.elements:
                if (
                    isinstance(element, cst.DictElement)
                    and literal_value(element.key) == "fused"
                    and isinstance(element.key, cst.SimpleString)
                ):
                    yield element.value, conditional
        elif isinstance(node, cst.Call) and self.qualified_names(node.func) & (
            names.DICT_CONSTRUCTORS
        ):
            fused = keyword_arg(node, "fused")
            if fused is not None:
                yield fused.value, conditional
        elif isinstance(node, cst.IfExp):
            yield from self.fused_in_spread(node.body, True, depth + 1)
            yield from self.fused_in_spread(node.orelse, True, depth + 1)
        elif isinstance(node, cst.Name):
            assigned = self.single_assigned_value(node)
            if assigned is not None:
                yield from self.fused_in_spread(assigned, conditional, depth + 1)

    def single_assigned_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of `name` when it is bound exactly once by a plain assignment in scope."""
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return None
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        if len(assignments) != 1:
            return None
        target = assignments[0].node
        return self.assigned_values.get(target) if isinstance(target, cst.Name) else None

    def collect_clip(self, call: cst.Call) -> None:
        if self.guard_depth:
            return
        receiver = call.func.value  # type: ignore[attr-defined]
        receiver_code = self.code(receiver)
        last_name = receiver_code.rsplit(".", 1)[-1].lower()
        if receiver_code == "self" and self.class_stack:
            clip = positional_or_keyword(call, 1, "gradient_clip_val")
            value = None if clip is None else self.resolve_literal(clip.value)[1]
            if value is not None and not is_clip_positive(value):
                return
            certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
            kind = SiteKind.MODULE_CLIP
        elif receiver_code in self.fabric_bindings or "fabric" in last_name:
            kind, certainty, value = SiteKind.FABRIC_CLIP, Certainty.KNOWN, None
        else:
            return
        detail = f"{self.code(call.func)}(...)"
        self.add(kind, call, certainty, detail, value, fixable=self.is_guardable(call))
        if kind is SiteKind.FABRIC_CLIP:
            # The clip belongs to the Fabric its receiver holds, when that is known.
            bound = self.fabric_bindings.get(receiver_code)
            self.sites[-1] = replace(self.sites[-1], entry=bound)

    def collect_super_clipping(self, call: cst.Call) -> None:
        """`super().configure_gradient_clipping(optimizer, gradient_clip_val=...)` clips with
        the value it passes; passing the hook's own parameter on leaves it to the Trainer."""
        if self.guard_depth:
            return
        clip = positional_or_keyword(call, 1, "gradient_clip_val")
        if clip is None or (
            isinstance(clip.value, cst.Name) and clip.value.value == "gradient_clip_val"
        ):
            return
        value = self.resolve_literal(clip.value)[1]
        if value is not None and not is_clip_positive(value):
            return
        certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
        detail = f"{self.code(call.func)}(gradient_clip_val={self.code(clip.value)})"
        self.add(SiteKind.MODULE_CLIP, call, certainty, detail, value, fixable=False)

    def is_guardable(self, call: cst.Call) -> bool:
        """The guard fix wraps a whole statement line that only calls or assigns the clip."""
        statement = self.statement_calls.get(call)
        if statement is None:
            return False
        if isinstance(statement, cst.Assign) and not all(
            isinstance(target.target, (cst.Name, cst.Attribute, cst.Subscript))
            for target in statement.targets
        ):
            return False
        return guard_test(call) is not None
