"""The `unfuse` fix: `fused=True` -> `fused=False` where the finding's optimizer is built.

Safe on every Lightning version: the optimizer's maths is the same (foreach kernels); only the
step is a little slower. The target is the `True` literal itself, wherever the detector found
it: the call's own argument, a `functools.partial`, or a `**dict(...)` / `**{...}` spread.
"""

from __future__ import annotations

import libcst as cst

from amp_clipfix.fixes.codemods.base import SiteFix
from amp_clipfix.models import Strategy


class UnfuseFix(SiteFix):
    DESCRIPTION = "Turn fused=True into fused=False on optimizers whose gradients Lightning clips."
    STRATEGY = Strategy.UNFUSE

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if original_node.value == "True" and self.is_target(original_node):
            return updated_node.with_changes(value="False")
        return updated_node
