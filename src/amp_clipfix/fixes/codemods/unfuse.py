"""The `unfuse` fix: `fused=True` -> `fused=False` where the finding's optimizer is built.

Safe on every Lightning version: the optimizer's maths is the same (foreach kernels); only the
step is a little slower. The target is the `True` literal itself, wherever the detector found
it: the call's own argument, a `functools.partial`, or a `**dict(...)` / `**{...}` spread.

On the Fabric path the finding's `fabric.clip_gradients(..., max_norm=...)` calls are targets
too: once Fabric clips the unfused optimizer itself it would raise on an fp16 overflow step
(its `error_if_nonfinite=True`), the step the GradScaler skips; they get
`error_if_nonfinite=False` (ACF007's fix).
"""

from __future__ import annotations

import libcst as cst

from amp_clipfix.fixes.codemods.base import SiteCodemod
from amp_clipfix.models import Strategy


class UnfuseCommand(SiteCodemod):
    DESCRIPTION = "Turn fused=True into fused=False on optimizers whose gradients Lightning clips."
    STRATEGY = Strategy.UNFUSE

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == "True" and self.is_target(original_node):
            return updated_node.with_changes(value="False")
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "clip_gradients"
            and self.is_target(original_node)
        ):
            return updated_node
        args = list(updated_node.args)
        keywords = {arg.keyword.value for arg in args if arg.keyword is not None}
        positional = [arg for arg in args if arg.keyword is None and not arg.star]
        if (
            any(arg.star for arg in args)
            or "error_if_nonfinite" in keywords
            or len(positional) >= 6
            or not ("max_norm" in keywords or len(positional) >= 4)
        ):
            return updated_node
        space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        added = cst.Arg(
            value=cst.Name("False"),
            keyword=cst.Name("error_if_nonfinite"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
            comma=args[-1].comma,
        )
        return updated_node.with_changes(
            args=[*args[:-1], args[-1].with_changes(comma=space), added]
        )
