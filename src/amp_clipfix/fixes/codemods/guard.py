"""The `guard` fix: clip only where Lightning can, through an inserted `can_clip_gradients`.

Training runs, but WITHOUT gradient clipping wherever the optimizer is fused under a scaler, so
the helper warns once at run time and the diff says so. A clip whose result is assigned keeps
every name bound, to what the skipped call would have returned: for a Fabric clip an inserted
`unclipped_gradient_norm` (the total norm for `max_norm`, None for `clip_val`), so `norm.item()`
and `if norm > x` keep working; `LightningModule.clip_gradients` returns None, so None there.
"""

from __future__ import annotations

import libcst as cst

from amp_clipfix.analysis.syntax import clip_call_of, guard_test, keyword_arg
from amp_clipfix.fixes.codemods.base import SiteFix
from amp_clipfix.fixes.codemods.guard_helper import (
    HELPER_NAME,
    HELPER_SOURCE,
    NORM_HELPER_NAME,
    NORM_HELPER_SOURCE,
)
from amp_clipfix.fixes.codemods.insert import has_helper, insert_helper
from amp_clipfix.models import Strategy


class GuardFix(SiteFix):
    DESCRIPTION = (
        "Wrap clip_gradients calls in `if can_clip_gradients(...)` (clipping may be skipped)."
    )
    STRATEGY = Strategy.GUARD

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.guarded = False
        self.needs_norm_helper = False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        if len(original_node.body) != 1:
            return updated_node
        call = clip_call_of(original_node.body[0])
        if call is None or not self.is_target(call):
            return updated_node
        test = guard_test(call)
        if test is None:
            return updated_node
        orelse = self.skipped_result(original_node.body[0], call)
        self.guarded = True
        return cst.If(
            test=test,
            body=cst.IndentedBlock([updated_node.with_changes(leading_lines=())]),
            orelse=orelse,
            leading_lines=updated_node.leading_lines,
        )

    def skipped_result(self, statement: cst.BaseSmallStatement, call: cst.Call) -> cst.Else | None:
        """The else branch of an assigned clip: the same names bound to what the call returns."""
        if isinstance(statement, cst.Assign):
            targets = [cst.AssignTarget(t.target) for t in statement.targets]
        elif isinstance(statement, cst.AnnAssign):
            targets = [cst.AssignTarget(statement.target)]
        else:
            return None
        value: cst.BaseExpression = cst.Name("None")
        receiver = call.func.value  # type: ignore[attr-defined]
        by_value = keyword_arg(call, "clip_val") is not None
        if not (isinstance(receiver, cst.Name) and receiver.value == "self") and not by_value:
            # fabric.clip_gradients(module, opt, ...) -> the helper (fabric, module, opt, ...)
            first = cst.Arg(receiver, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args = [first, *(arg.deep_clone() for arg in call.args)]
            value = cst.Call(cst.Name(NORM_HELPER_NAME), args=args)
            self.needs_norm_helper = True
        line = cst.SimpleStatementLine([cst.Assign(targets, value)])
        return cst.Else(body=cst.IndentedBlock([line]))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        # Each insert goes right after the imports, so the last one inserted comes first.
        if self.needs_norm_helper and not has_helper(updated_node, NORM_HELPER_NAME):
            updated_node = insert_helper(updated_node, NORM_HELPER_SOURCE)
        if self.guarded and not has_helper(updated_node, HELPER_NAME):
            updated_node = insert_helper(updated_node, HELPER_SOURCE)
        return updated_node
