"""The `guard` fix: clip only where Lightning can, through an inserted `can_clip_gradients`.

Training runs, but WITHOUT gradient clipping wherever the optimizer is fused under a scaler, so
the helper warns once at run time and the diff says so. A clip whose result is assigned keeps
every name bound (`norm = None` on the other branch).
"""

from __future__ import annotations

import libcst as cst

from amp_clipfix.analysis.syntax import clip_call_of, guard_test
from amp_clipfix.fixes.codemods.base import SiteCodemod
from amp_clipfix.fixes.codemods.guard_helper import HELPER_NAME, HELPER_SOURCE
from amp_clipfix.fixes.codemods.insert import has_helper, insert_helper
from amp_clipfix.models import Strategy


class GuardCommand(SiteCodemod):
    DESCRIPTION = (
        "Wrap clip_gradients calls in `if can_clip_gradients(...)` (clipping may be skipped)."
    )
    STRATEGY = Strategy.GUARD

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.guarded = False

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
        orelse = None
        statement = original_node.body[0]
        targets = []
        if isinstance(statement, cst.Assign):
            targets = [cst.AssignTarget(t.target) for t in statement.targets]
        elif isinstance(statement, cst.AnnAssign):
            targets = [cst.AssignTarget(statement.target)]
        if targets:
            orelse = cst.Else(
                body=cst.IndentedBlock(
                    [cst.SimpleStatementLine([cst.Assign(targets, cst.Name("None"))])]
                )
            )
        self.guarded = True
        return cst.If(
            test=test,
            body=cst.IndentedBlock([updated_node.with_changes(leading_lines=())]),
            orelse=orelse,
            leading_lines=updated_node.leading_lines,
        )

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.guarded or has_helper(updated_node, HELPER_NAME):
            return updated_node
        return insert_helper(updated_node, HELPER_SOURCE)
