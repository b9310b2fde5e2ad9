"""The fixes as `VisitorBasedCodemodCommand`s, so `python -m libcst.tool codemod` can run each on
its own (`commands.UnfuseCommand`, ...). Importing this module
imports `libcst.codemod` and its matchers, so the pipeline, which runs the plain fixes
(fixes/transform.py), never does."""

from __future__ import annotations

from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from amp_clipfix.fixes.codemods.base import SiteFix, standalone_targets
from amp_clipfix.fixes.codemods.bf16 import Bf16Fix
from amp_clipfix.fixes.codemods.guard import GuardFix
from amp_clipfix.fixes.codemods.unfuse import UnfuseFix
from amp_clipfix.fixes.codemods.unscale import UnscaleFix


# mypy reads `context` as two types (Codemod's CodemodContext, SiteFix's FixContext); a
# CodemodContext is a FixContext, hence the ignores on the classes below.
class SiteCodemod(VisitorBasedCodemodCommand, SiteFix):  # type: ignore[misc]
    """A fix run as a codemod: without targets it finds its module's findings itself."""

    def __init__(self, context: CodemodContext, *args: Any, **kwargs: Any) -> None:
        VisitorBasedCodemodCommand.__init__(self, context)
        fix = next(c for c in type(self).__mro__ if c.__dict__.get("STRATEGY") is not None)
        fix.__init__(self, context, *args, **kwargs)  # type: ignore[misc]

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.prepare(tree)
        if self.targets is None:
            self.targets = standalone_targets(tree, self.context, self.STRATEGY)
        if not self.targets:
            return tree
        return tree.visit(self)


class UnfuseCommand(SiteCodemod, UnfuseFix):  # type: ignore[misc]
    DESCRIPTION = UnfuseFix.DESCRIPTION


class Bf16Command(SiteCodemod, Bf16Fix):  # type: ignore[misc]
    DESCRIPTION = Bf16Fix.DESCRIPTION


class GuardCommand(SiteCodemod, GuardFix):  # type: ignore[misc]
    DESCRIPTION = GuardFix.DESCRIPTION


class UnscaleCommand(SiteCodemod, UnscaleFix):  # type: ignore[misc]
    DESCRIPTION = UnscaleFix.DESCRIPTION
