"""The `bf16` fix: run under `"bf16-mixed"`, which needs no GradScaler, so nothing to unscale.

A fix on the Fabric path of every Lightning release; on the Trainer path only after Lightning
2.6.6 (released versions refuse to clip fused optimizers under bf16-mixed too). Changes numerics
and needs bf16 hardware. A `MixedPrecision` / `FSDPPrecision` plugin also loses its scaler
argument, because Lightning raises when bf16-mixed is given a scaler.

The fix leaves nothing stale behind (see `dead.py`): a `scaler = GradScaler(...)` line that only fed
the plugin goes with the argument, and so does an import nothing uses any more. A precision
written as a module constant (`PRECISION = "16-mixed"`, then `MixedPrecision(PRECISION, ...)`)
is rewritten at the constant, once, however many calls use it.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import (
    Assignment,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from amp_clipfix.analysis import names
from amp_clipfix.analysis.syntax import keyword_arg, literal_value
from amp_clipfix.fixes.codemods.base import SiteFix
from amp_clipfix.fixes.codemods.dead import names_in, remove_lines, remove_unused_imports
from amp_clipfix.models import Strategy

BF16 = "bf16-mixed"


def bf16_literal(node: cst.BaseExpression) -> cst.BaseExpression:
    """`"bf16-mixed"` in the quote style of the literal it replaces."""
    if isinstance(node, cst.SimpleString):
        return node.with_changes(value=f"{node.prefix}{node.quote}{BF16}{node.quote}")
    return cst.SimpleString(f'"{BF16}"')


def plugin_args(call: cst.Call, scaler_index: int | None) -> tuple[cst.Arg | None, cst.Arg | None]:
    """The precision and scaler arguments of `Fabric(precision=...)` or a precision plugin."""
    args = list(call.args)
    positional = [arg for arg in args if arg.keyword is None and not arg.star]
    precision = keyword_arg(call, "precision")
    if precision is None and positional:
        precision = positional[0]
    scaler = keyword_arg(call, "scaler")
    if scaler is None and scaler_index is not None and scaler_index < len(positional):
        scaler = positional[scaler_index]
    return precision, scaler


def is_grad_scaler(qualified: set[str]) -> bool:
    """torch's GradScaler (torch.amp, torch.cuda.amp, the sharded one): building it does nothing
    else, so a scaler only the plugin used can go."""
    return bool(qualified & names.GRAD_SCALERS)


class _Calls(cst.CSTVisitor):
    """Every call of a tree, in the order a walk meets them (what `libcst.matchers.findall`
    with a `Call()` matcher gives, without importing the matchers)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.found.append(node)


def calls_in(tree: cst.CSTNode) -> list[cst.Call]:
    walk = _Calls()
    tree.visit(walk)
    return walk.found


class Bf16Fix(SiteFix):
    DESCRIPTION = 'Rewrite fp16 mixed precision ("16-mixed", "16", 16) to "bf16-mixed".'
    STRATEGY = Strategy.BF16
    METADATA_DEPENDENCIES = (
        PositionProvider,
        QualifiedNameProvider,
        ScopeProvider,
        ParentNodeProvider,
    )

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.constants: set[cst.CSTNode] = set()  # literals of constants to rewrite
        self.dead_lines: set[cst.CSTNode] = set()  # `scaler = GradScaler(...)` lines to drop
        self.maybe_unused: set[str] = set()  # names the removed code read

    def visit_Module(self, node: cst.Module) -> None:
        """Before rewriting: the constants and scaler lines the plugin calls point at (both are
        usually written above the call, so they must be known before the walk reaches them)."""
        for call in calls_in(node):
            if self.is_target(call):
                self.plan_call(call)

    def plan_call(self, call: cst.Call) -> None:
        precision, scaler = plugin_args(call, self.scaler_index(call))
        if precision is not None:
            constant = self.constant_literal(precision.value)
            if constant is not None:
                self.constants.add(constant)
        if scaler is None:
            return
        self.maybe_unused |= names_in(scaler.value)
        line = self.dead_scaler_line(scaler.value)
        if line is not None:
            self.dead_lines.add(line)
            self.maybe_unused |= names_in(line)

    def assignment_of(self, name: cst.Name) -> Assignment | None:
        """The single plain assignment that binds `name` where it is read, if there is one."""
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return None
        assignments = list(scope[name.value])
        if len(assignments) != 1 or not isinstance(assignments[0], Assignment):
            return None
        return assignments[0]

    def assigned_line(self, assignment: Assignment) -> cst.SimpleStatementLine | None:
        """The line `NAME = value` that holds the assignment (one target, one statement)."""
        assign = self.get_metadata(ParentNodeProvider, assignment.node, None)
        if isinstance(assign, cst.AssignTarget):
            assign = self.get_metadata(ParentNodeProvider, assign, None)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        line = self.get_metadata(ParentNodeProvider, assign, None)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        return None

    def constant_literal(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """The fp16 literal of `PRECISION = "16-mixed"` when `value` is that constant's name."""
        if not isinstance(value, cst.Name):
            return None
        assignment = self.assignment_of(value)
        line = None if assignment is None else self.assigned_line(assignment)
        if line is None:
            return None
        literal = line.body[0].value  # type: ignore[attr-defined]
        return literal if literal_value(literal) in names.SCALER_PRECISIONS else None

    def dead_scaler_line(self, value: cst.BaseExpression) -> cst.SimpleStatementLine | None:
        """`scaler = GradScaler(...)` when the removed argument was its only reader."""
        if not isinstance(value, cst.Name):
            return None
        assignment = self.assignment_of(value)
        if assignment is None or len(assignment.references) != 1:
            return None
        line = self.assigned_line(assignment)
        built = None if line is None else line.body[0].value  # type: ignore[attr-defined]
        if not isinstance(built, cst.Call):
            return None
        qualified = {q.name for q in self.get_metadata(QualifiedNameProvider, built.func, set())}
        return line if is_grad_scaler(qualified) else None

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        return bf16_literal(updated_node) if self.rewrites(original_node) else updated_node

    def leave_Integer(
        self, original_node: cst.Integer, updated_node: cst.Integer
    ) -> cst.BaseExpression:
        return bf16_literal(updated_node) if self.rewrites(original_node) else updated_node

    def rewrites(self, literal: cst.CSTNode) -> bool:
        return literal in self.constants or self.is_target(literal)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not self.is_target(original_node):
            return updated_node
        precision, scaler = plugin_args(updated_node, self.scaler_index(original_node))
        args = list(updated_node.args)
        original_precision, _ = plugin_args(original_node, self.scaler_index(original_node))
        # A precision read from a constant is rewritten at the constant (see `plan_call`).
        if (
            precision is not None
            and original_precision is not None
            and self.constant_literal(original_precision.value) is None
        ):
            index = args.index(precision)
            args[index] = precision.with_changes(value=bf16_literal(precision.value))
        if scaler is not None:
            index = args.index(scaler)
            del args[index]
            if index == len(args) and args:
                # The new last argument takes over the removed one's ending: its trailing comma
                # (or none) and the space before `)`, so the closing line keeps its place.
                args[-1] = args[-1].with_changes(
                    comma=scaler.comma, whitespace_after_arg=scaler.whitespace_after_arg
                )
        return updated_node.with_changes(args=args)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return remove_lines(original_node, updated_node, self.dead_lines)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        module = remove_lines(original_node, updated_node, self.dead_lines)
        return remove_unused_imports(module, self.maybe_unused)

    def scaler_index(self, call: cst.Call) -> int | None:
        for qualified in self.get_metadata(QualifiedNameProvider, call.func, set()):
            plugin = names.plugin_scaler_index(qualified.name)
            if plugin is not None:
                return plugin[1]
        return None
