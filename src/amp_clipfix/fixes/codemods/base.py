"""What the fix codemods share: finding their target nodes by start position.

Each fix is a plain libcst transformer (`SiteFix`): the pipeline runs them in one walk
(fixes/transform.py) without `libcst.codemod`, whose import builds libcst's matchers (hundreds
of dataclasses, ~0.17 s of CPU: more than a small project's whole check). Each has its
`VisitorBasedCodemodCommand` in fixes/codemods/commands.py (`commands.UnfuseCommand`, ...),
which `python -m libcst.tool codemod` runs on its own.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import ClassVar, Protocol

import libcst as cst
from libcst.metadata import PositionProvider, ProviderT

from amp_clipfix.models import Strategy

Position = tuple[int, int]  # (line, column) where a target node starts


class FixContext(Protocol):
    """What a fix reads of its context: the file's name (a `libcst.codemod.CodemodContext`
    has it, and so has the pipeline's `FileContext`)."""

    @property
    def filename(self) -> str | None: ...


class FileContext:
    """The pipeline's context of one file's fixes."""

    __slots__ = ("filename",)

    def __init__(self, filename: str | None) -> None:
        self.filename = filename


class SiteFix(cst.CSTTransformer):
    """Rewrites the nodes that start at the given positions.

    The pipeline passes the positions of the sites a finding's fix targets. Run on its own (its
    codemod command, for example by `python -m libcst.tool codemod`), the fix finds the findings
    of its module itself and fixes those its strategy can fix (`standalone_targets`).
    """

    STRATEGY: ClassVar[Strategy]
    DESCRIPTION: str  # what `libcst.tool list` shows of its command
    METADATA_DEPENDENCIES: ClassVar[tuple[ProviderT, ...]] = (PositionProvider,)

    def __init__(self, context: FixContext, targets: Collection[Position] | None = None) -> None:
        super().__init__()
        self.context = context
        self.targets: set[Position] | None = None if targets is None else set(targets)

    def prepare(self, tree: cst.Module) -> None:
        """Run on its own, before its walk: what the pipeline would have given (unscale: the
        target release from the module's project's pins)."""

    def is_target(self, node: cst.CSTNode) -> bool:
        start = self.get_metadata(PositionProvider, node).start
        return self.targets is not None and (start.line, start.column) in self.targets


def standalone_targets(tree: cst.Module, context: FixContext, strategy: Strategy) -> set[Position]:
    """Detect, link (within this module only, resolved as a project of its own) and choose
    fixes, as the pipeline would."""
    from amp_clipfix.analysis.resolve import resolve_module
    from amp_clipfix.fixes.choose import choose_fixes
    from amp_clipfix.project.discover import find_project_root
    from amp_clipfix.project.pins import resolve_target
    from amp_clipfix.rules import find_findings

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
