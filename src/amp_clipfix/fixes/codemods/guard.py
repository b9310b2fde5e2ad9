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
        if not self.guarded or has_helper(updated_node):
            return updated_node
        return insert_helper(updated_node)


def has_helper(module: cst.Module) -> bool:
    return any(
        isinstance(statement, cst.FunctionDef) and statement.name.value == HELPER_NAME
        for statement in module.body
    )


def is_preamble(index: int, statement: cst.BaseStatement) -> bool:
    """Docstring, imports and `__future__` lines, after which the helper goes."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    if all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body):
        return True
    return (
        index == 0
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def insert_helper(module: cst.Module) -> cst.Module:
    """Insert the helper after the leading imports, with PEP 8 blank lines around it."""
    helper_module = cst.parse_module(HELPER_SOURCE.replace("\n", module.default_newline))
    helper = helper_module.body[0]
    body = list(module.body)
    index = 0
    while index < len(body) and is_preamble(index, body[index]):
        index += 1
    two_blank_lines = (cst.EmptyLine(), cst.EmptyLine())
    helper = helper.with_changes(leading_lines=two_blank_lines if index else ())
    if index < len(body):
        following = body[index]
        kept = list(following.leading_lines)
        while kept and kept[0].comment is None:
            kept.pop(0)
        body[index] = following.with_changes(leading_lines=(*two_blank_lines, *kept))
    body.insert(index, helper)
    return module.with_changes(body=body)
