"""The `unscale` fix: clip a fused optimizer through the run's own GradScaler (DESIGN.md §1b).

Fabric: `fabric.clip_gradients(model, optimizer, ...)` becomes
`clip_gradients_unscaled(fabric, model, optimizer, ...)`, a helper inserted once per module.
Trainer: the LightningModule class gets a `configure_gradient_clipping` override that clips a
fused optimizer itself and hands every other optimizer to `super()`; an existing override is
edited instead (its `self.clip_gradients(...)` and `super().configure_gradient_clipping(...)` calls
go through the helper), and so are `self.clip_gradients(...)` calls of manual optimization.

Targets are the positions of the Fabric clip calls, of `self.clip_gradients(...)` calls, and of
any site inside a LightningModule class (its fused optimizer): that class is the one edited.
Safe: numerics, the fused kernel, the precision and clipping all stay.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider

from amp_clipfix.fixes.codemods.base import FixContext, Position, SiteFix
from amp_clipfix.fixes.codemods.insert import has_helper, insert_helper, parsed_statement
from amp_clipfix.fixes.codemods.unscale_helper import (
    FABRIC_HELPER,
    HELPER_SOURCES,
    MODULE_HELPER,
    OVERRIDE_NAME,
    override_source,
)
from amp_clipfix.models import Strategy
from amp_clipfix.project.discover import find_project_root
from amp_clipfix.project.pins import resolve_target
from amp_clipfix.project.version import Target


def hook_has_optimizer_idx(target: Target) -> bool:
    """Lightning 1.x passes `optimizer_idx` to `configure_gradient_clipping`; 2.0 dropped it.

    The one place that reads the target release for this fix. A range spanning both lines has no
    single signature: choose.py refuses it before a codemod runs.
    """
    return bool(target.clip_hook_takes_optimizer_idx)


def helper_call(helper: str, first: cst.BaseExpression, call: cst.Call) -> cst.Call:
    """`helper(first, <the call's own arguments>)`, keeping their formatting."""
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args = [cst.Arg(first, comma=space if call.args else cst.MaybeSentinel.DEFAULT), *call.args]
    return call.with_changes(func=cst.Name(helper), args=args)


def is_fabric_clip(call: cst.Call) -> bool:
    """`<anything but self>.clip_gradients(...)`: the collector's Fabric clip sites."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "clip_gradients"
        and not (isinstance(func.value, cst.Name) and func.value.value == "self")
    )


def is_manual_optimization(body: cst.IndentedBlock) -> bool:
    """The class sets `self.automatic_optimization = False` in one of its methods."""
    return any(
        isinstance(line.body[0], cst.Assign)
        and isinstance(line.body[0].value, cst.Name)
        and line.body[0].value.value == "False"
        and any(
            isinstance(target.target, cst.Attribute)
            and target.target.attr.value == "automatic_optimization"
            for target in line.body[0].targets
        )
        for method in body.body
        if isinstance(method, cst.FunctionDef) and isinstance(method.body, cst.IndentedBlock)
        for line in method.body.body
        if isinstance(line, cst.SimpleStatementLine) and line.body
    )


def is_super_hook_call(call: cst.Call) -> bool:
    """`super().configure_gradient_clipping(...)`."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == OVERRIDE_NAME
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def without_optimizer_idx(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """A 1.x hook call's arguments without `optimizer_idx` (the helper does not take it)."""
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    dropped = next(
        (arg for arg in args if arg.keyword and arg.keyword.value == "optimizer_idx"), None
    )
    if dropped is None and len(positional) > 1:
        dropped = positional[1]
    kept = [arg for arg in args if arg is not dropped]
    if kept and dropped is args[-1]:
        kept[-1] = kept[-1].with_changes(comma=dropped.comma)
    return kept


class UnscaleFix(SiteFix):
    DESCRIPTION = (
        "Clip fused optimizers through the run's GradScaler: Fabric clip calls go through an "
        "inserted helper, LightningModules get a configure_gradient_clipping override."
    )
    STRATEGY = Strategy.UNSCALE

    def __init__(
        self,
        context: FixContext,
        targets: Collection[Position] | None = None,
        target: Target | None = None,
    ) -> None:
        super().__init__(context, targets)
        # None when run on its own: the module's project's pins decide (prepare).
        # The pipeline's combined walk never calls that, so a given target is read here.
        self.target = target
        self.optimizer_idx = target is not None and hook_has_optimizer_idx(target)
        self.used: set[str] = set()  # helpers the rewritten code calls
        self.classes: list[bool] = []  # per enclosing class: is it edited?
        self.functions: list[str] = []
        self.anchors: set[Position] = set()  # targets that mark their class for the override
        self.module_config = cst.PartialParserConfig()

    def prepare(self, tree: cst.Module) -> None:
        if self.target is None:
            path = Path(self.context.filename or "<module>")
            self.target = resolve_target(find_project_root(path)).target
        self.optimizer_idx = hook_has_optimizer_idx(self.target)

    # -- classes -------------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        """Every target but a Fabric clip call marks the class around it for the override."""
        self.module_config = node.config_for_parsing
        targets = self.targets or set()
        fabric_calls = {
            (code_range.start.line, code_range.start.column)
            for candidate, code_range in self.metadata[PositionProvider].items()
            if isinstance(candidate, cst.Call)
            and is_fabric_clip(candidate)
            and isinstance(code_range, CodeRange)
        }
        self.anchors = targets - fabric_calls

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        code_range = self.get_metadata(PositionProvider, node)
        start = (code_range.start.line, code_range.start.column)
        end = (code_range.end.line, code_range.end.column)
        inner = any(start <= anchor < end for anchor in self.anchors)
        self.classes.append(inner)
        if inner and len(self.classes) > 1:
            self.classes[-2] = False  # the innermost class holding a target is the one edited

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        edited = self.classes.pop()
        if not edited or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = updated_node.body
        if any(
            isinstance(statement, cst.FunctionDef) and statement.name.value == OVERRIDE_NAME
            for statement in body.body
        ):
            return updated_node  # an existing override: its calls are rewritten instead
        if is_manual_optimization(body):
            return updated_node  # Lightning never calls the hook; its clip calls are rewritten
        override = parsed_statement(
            override_source(self.optimizer_idx), self.module_config
        ).with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        self.used.add(MODULE_HELPER)
        return updated_node.with_changes(body=body.with_changes(body=[*body.body, override]))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.functions.pop()
        return updated_node

    # -- calls ---------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        in_override = self.functions[-1:] == [OVERRIDE_NAME]
        if in_override and self.classes and self.classes[-1] and is_super_hook_call(updated_node):
            args = updated_node.args
            if self.optimizer_idx:
                args = tuple(without_optimizer_idx(args))
            self.used.add(MODULE_HELPER)
            return helper_call(
                MODULE_HELPER, cst.Name("self"), updated_node.with_changes(args=args)
            )
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "clip_gradients"
            and self.is_target(original_node)
        ):
            return updated_node
        if is_fabric_clip(original_node):
            self.used.add(FABRIC_HELPER)
            return helper_call(FABRIC_HELPER, func.value, updated_node)
        self.used.add(MODULE_HELPER)
        return helper_call(MODULE_HELPER, func.value, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        for helper in sorted(self.used, reverse=True):
            if not has_helper(updated_node, helper):
                updated_node = insert_helper(updated_node, HELPER_SOURCES[helper])
        return updated_node
