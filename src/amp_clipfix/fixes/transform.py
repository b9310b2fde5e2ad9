"""Run the chosen fixes on one file and give its new text (the source adapter renders and
verifies it).

A file may need several codemods (under `auto`, a Fabric finding takes bf16 and a Trainer finding
unfuse). Codemods find their targets by start position, and an earlier pass may move later
targets, so between passes the file's sites are collected again and matched by (kind, ordinal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext

from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.read import ReadFile
from amp_clipfix.fixes.codemods.base import SiteCodemod
from amp_clipfix.fixes.codemods.bf16 import Bf16Command
from amp_clipfix.fixes.codemods.guard import GuardCommand
from amp_clipfix.fixes.codemods.unfuse import UnfuseCommand
from amp_clipfix.models import Site, SiteKind, Strategy
from amp_clipfix.sources.base import Language, VerifyError
from amp_clipfix.sources.yaml import fix_config

# unfuse only flips a literal, so it goes first; guard inserts lines, so it goes last.
PASSES: tuple[tuple[Strategy, type[SiteCodemod]], ...] = (
    (Strategy.UNFUSE, UnfuseCommand),
    (Strategy.BF16, Bf16Command),
    (Strategy.GUARD, GuardCommand),
)


def site_keys(sites: Sequence[Site]) -> dict[Site, tuple[SiteKind, int]]:
    counts: dict[SiteKind, int] = {}
    keys = {}
    for site in sites:
        keys[site] = (site.kind, counts.get(site.kind, 0))
        counts[site.kind] = keys[site][1] + 1
    return keys


def transform_module(
    path: Path,
    module: cst.Module,
    sites: Sequence[Site],
    targets: Mapping[Strategy, Sequence[Site]],
) -> cst.Module:
    """Apply each strategy's codemod to its target sites of this file."""
    wanted_keys = site_keys(sites)
    current, current_sites = module, list(sites)
    for strategy, codemod in PASSES:
        wanted = {wanted_keys[site] for site in targets.get(strategy, ())}
        if not wanted:
            continue
        if current is not module:
            current_sites = list(collect_sites(path, current).sites)
        positions = {
            (site.span.line, site.span.column)
            for site, key in site_keys(current_sites).items()
            if key in wanted
        }
        context = CodemodContext(filename=str(path))
        current = codemod(context, positions).transform_module(current)
    return current


def fixed_text(file: ReadFile, targets: Mapping[Strategy, Sequence[Site]]) -> str:
    """The document's text after the fixes (one combined result per file); raises VerifyError
    when libcst cannot give the file back byte for byte."""
    document = file.document
    if document.language is Language.YAML or file.tree is None:  # exact token edits
        return fix_config(document.text, [site for sites in targets.values() for site in sites])
    module = transform_module(document.path, file.tree, file.sites.sites, targets)
    return with_lost_ending(document.text, file.tree.code, module.code)


def with_lost_ending(original: str, round_trip: str, code: str) -> str:
    """libcst drops a final bare CR (`x = 1\r`); give back any ending its round trip lost."""
    if round_trip == original:
        return code
    if original.startswith(round_trip):
        return code + original[len(round_trip) :]
    raise VerifyError("libcst does not give this file back byte for byte; not fixed")
