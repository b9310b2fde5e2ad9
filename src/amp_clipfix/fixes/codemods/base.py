"""What the fix codemods share: finding their target nodes by start position."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import ClassVar

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import PositionProvider, ProviderT

from amp_clipfix.analysis.resolve import resolve_module
from amp_clipfix.models import Strategy
from amp_clipfix.project.discover import find_project_root
from amp_clipfix.project.pins import resolve_target
from amp_clipfix.rules import find_findings

Position = tuple[int, int]  # (line, column) where a target node starts


class SiteCodemod(VisitorBasedCodemodCommand):
    """Rewrites the nodes that start at the given positions.

    The pipeline passes the positions of the sites a finding's fix targets. Run on its own (for
    example by `python -m libcst.tool codemod`), the codemod finds the findings of its module
    itself and fixes those its strategy can fix.
    """

    STRATEGY: ClassVar[Strategy]
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (PositionProvider,)

    def __init__(self, context: CodemodContext, targets: Collection[Position] | None = None):
        super().__init__(context)
        self.targets: set[Position] | None = None if targets is None else set(targets)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        if self.targets is None:
            self.targets = standalone_targets(tree, self.context, self.STRATEGY)
        if not self.targets:
            return tree
        return super().transform_module_impl(tree)

    def is_target(self, node: cst.CSTNode) -> bool:
        start = self.get_metadata(PositionProvider, node).start
        return self.targets is not None and (start.line, start.column) in self.targets


def standalone_targets(
    tree: cst.Module, context: CodemodContext, strategy: Strategy
) -> set[Position]:
    """Detect, link (within this module only, resolved as a project of its own) and choose
    fixes, as the pipeline would."""
    from amp_clipfix.fixes.choose import choose_fixes

    path = Path(context.filename or "<module>")
    target = resolve_target(find_project_root(path)).target  # the module's project's pins
    findings = choose_fixes(
        find_findings([resolve_module(path, tree.code)], target), strategy, target
    )
    return {
        (site.span.line, site.span.column)
        for finding in findings
        if finding.fix is not None
        for site in finding.fix.targets
    }
