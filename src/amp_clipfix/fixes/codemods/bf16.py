"""The `bf16` fix: run under `"bf16-mixed"`, which needs no GradScaler, so nothing to unscale.

A fix on the Fabric path of every Lightning release; on the Trainer path only after Lightning
2.6.6 (released versions refuse to clip fused optimizers under bf16-mixed too). Changes numerics
and needs bf16 hardware. A `MixedPrecision` / `FSDPPrecision` plugin also loses its scaler
argument, because Lightning raises when bf16-mixed is given a scaler.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from amp_clipfix.analysis import names
from amp_clipfix.analysis.syntax import keyword_arg
from amp_clipfix.fixes.codemods.base import SiteCodemod
from amp_clipfix.models import Strategy

BF16 = "bf16-mixed"


def bf16_literal(node: cst.BaseExpression) -> cst.BaseExpression:
    """`"bf16-mixed"` in the quote style of the literal it replaces."""
    if isinstance(node, cst.SimpleString):
        return node.with_changes(value=f"{node.prefix}{node.quote}{BF16}{node.quote}")
    return cst.SimpleString(f'"{BF16}"')


class Bf16Command(SiteCodemod):
    DESCRIPTION = 'Rewrite fp16 mixed precision ("16-mixed", "16", 16) to "bf16-mixed".'
    STRATEGY = Strategy.BF16
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        return bf16_literal(updated_node) if self.is_target(original_node) else updated_node

    def leave_Integer(
        self, original_node: cst.Integer, updated_node: cst.Integer
    ) -> cst.BaseExpression:
        return bf16_literal(updated_node) if self.is_target(original_node) else updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not self.is_target(original_node):
            return updated_node
        scaler_index = self.scaler_index(original_node)
        args = list(updated_node.args)
        precision = keyword_arg(updated_node, "precision")
        positional = [i for i, arg in enumerate(args) if arg.keyword is None and not arg.star]
        if precision is None and positional:
            precision = args[positional[0]]
        if precision is not None:
            index = args.index(precision)
            args[index] = precision.with_changes(value=bf16_literal(precision.value))
        scaler = keyword_arg(updated_node, "scaler")
        if scaler is None and scaler_index is not None and scaler_index < len(positional):
            scaler = args[positional[scaler_index]]
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

    def scaler_index(self, call: cst.Call) -> int | None:
        for qualified in self.get_metadata(QualifiedNameProvider, call.func, set()):
            plugin = names.plugin_scaler_index(qualified.name)
            if plugin is not None:
                return plugin[1]
        return None
