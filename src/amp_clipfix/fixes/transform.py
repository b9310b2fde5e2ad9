"""Run the chosen fixes on one file and give its new text (the source adapter renders and
verifies it).

A file may need several codemods (a Fabric finding and a Trainer finding can take different
fixes). Codemods find their targets by start position, so they all run in one walk over the tree
the sites were read from: nothing is collected twice, and no codemod moves another's targets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from amp_clipfix.analysis.read import ReadFile
from amp_clipfix.fixes.codemods.base import FileContext, FixContext, Position, SiteFix
from amp_clipfix.fixes.codemods.bf16 import Bf16Fix
from amp_clipfix.fixes.codemods.guard import GuardFix
from amp_clipfix.fixes.codemods.unfuse import UnfuseFix
from amp_clipfix.fixes.codemods.unscale import UnscaleFix
from amp_clipfix.fixes.helper_module import import_helpers
from amp_clipfix.models import Site, Strategy
from amp_clipfix.project.version import DEFAULT_TARGET, Target
from amp_clipfix.sources.base import Language, VerifyError
from amp_clipfix.sources.text import restore_dropped_whitespace
from amp_clipfix.sources.yaml import fix_config

# The order in which codemods see a node when several rewrite the same one.
PASSES: tuple[tuple[Strategy, type[SiteFix]], ...] = (
    (Strategy.UNFUSE, UnfuseFix),
    (Strategy.BF16, Bf16Fix),
    (Strategy.UNSCALE, UnscaleFix),
    (Strategy.GUARD, GuardFix),
)


class CombinedFixes(cst.CSTTransformer):
    """Every chosen fix of one file in a single walk over the tree the sites were read from,
    so target positions are the sites' own and no fix looks for its targets again after
    another has moved them. A plain transformer, as each fix is (codemods/base.py): what
    `libcst.codemod` would add (a metadata wrapper, imports asked through its context) is the
    wrapper made here; no fix asks for imports that way."""

    def __init__(self, parts: Sequence[SiteFix]) -> None:
        super().__init__()
        self.parts = tuple(parts)

    def transform(self, module: cst.Module) -> cst.Module:
        """The fixed module, its metadata computed on a copy of `module` (as a codemod's
        `transform_module` does)."""
        wrapper = cst.MetadataWrapper(module)
        with ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.resolve(wrapper))
            return wrapper.module.visit(self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        for part in self.parts:
            part.on_visit(node)
        return True

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        result: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]
        result = updated_node
        for part in self.parts:
            if not isinstance(result, cst.CSTNode):
                break  # removed or split: nothing is left for the others to rewrite
            result = part.on_leave(original_node, result)
        return result


def transform_module(
    path: Path,
    module: cst.Module,
    targets: Mapping[Strategy, Sequence[Site]],
    target: Target = DEFAULT_TARGET,
) -> cst.Module:
    """Apply each strategy's codemod to its target sites of this file, in one walk; `target` is
    the target Lightning release (the unscale override's signature depends on it)."""
    context = FileContext(str(path))
    parts = [
        part(
            context,
            codemod,
            {(site.span.line, site.span.column) for site in targets[strategy]},
            target,
        )
        for strategy, codemod in PASSES
        if targets.get(strategy)
    ]
    return CombinedFixes(parts).transform(module)


def part(
    context: FixContext, codemod: type[SiteFix], positions: set[Position], target: Target
) -> SiteFix:
    """One fix for the combined walk; unscale also needs the target release."""
    if codemod is UnscaleFix:
        return UnscaleFix(context, positions, target)
    return codemod(context, positions)


@dataclass(frozen=True)
class HelperImports:
    """`helper-module`: the dotted module the helpers are imported from, the project root it
    lies in, and the helper names the fixed files import (filled in as files are fixed)."""

    module: str
    root: Path
    imported: set[str] = field(default_factory=set)
    importers: set[Path] = field(default_factory=set)  # the fixed files that import them


def fixed_text(
    file: ReadFile,
    targets: Mapping[Strategy, Sequence[Site]],
    target: Target = DEFAULT_TARGET,
    helpers: HelperImports | None = None,
) -> str:
    """The document's text after the fixes (one combined result per file); raises VerifyError
    when libcst cannot give the file back byte for byte."""
    document = file.document
    if document.language is Language.YAML or file.tree is None:  # exact token edits
        return fix_config(document.text, [site for sites in targets.values() for site in sites])
    module = transform_module(document.path, file.tree, targets, target)
    if helpers is not None:
        module, names = import_helpers(file.tree, module, helpers.module, helpers.root)
        helpers.imported.update(names)
        if names:
            helpers.importers.add(document.path)
    return with_lost_ending(document.text, file.tree.code, module.code)


def with_lost_ending(original: str, round_trip: str, code: str) -> str:
    """libcst drops a final bare CR (`x = 1\r`) and form feeds starting a line; give back what
    its round trip lost."""
    if round_trip == original:
        return code
    if original.startswith(round_trip):
        return code + original[len(round_trip) :]
    restored = restore_dropped_whitespace(original, round_trip, code)
    if restored is not None:
        return restored
    raise VerifyError("libcst does not give this file back byte for byte; not fixed")
