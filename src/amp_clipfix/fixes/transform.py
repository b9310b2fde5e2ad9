"""Run the chosen codemods on one parsed file and verify that the result still parses.

A file may need several codemods (under `auto`, a Fabric finding takes bf16 and a Trainer finding
unfuse). Codemods find their targets by start position, and an earlier pass may move later
targets, so between passes the file's sites are collected again and matched by (kind, ordinal).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext

from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.fixes.codemods.base import SiteCodemod
from amp_clipfix.fixes.codemods.bf16 import Bf16Command
from amp_clipfix.fixes.codemods.guard import GuardCommand
from amp_clipfix.fixes.codemods.unfuse import UnfuseCommand
from amp_clipfix.models import Site, SiteKind, Strategy

# unfuse only flips a literal, so it goes first; guard inserts lines, so it goes last.
PASSES: tuple[tuple[Strategy, type[SiteCodemod]], ...] = (
    (Strategy.UNFUSE, UnfuseCommand),
    (Strategy.BF16, Bf16Command),
    (Strategy.GUARD, GuardCommand),
)


class VerifyError(Exception):
    """The transformed code does not parse: it is never written."""


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


def verify(original: str, new: str) -> None:
    """The new code must parse with libcst, and with Python's own parser where the old did."""
    try:
        cst.parse_module(new)
    except cst.ParserSyntaxError as error:
        raise VerifyError(f"fixed code does not parse: {error.message}") from None
    try:
        ast.parse(original)
    except (SyntaxError, ValueError):
        return
    try:
        ast.parse(new)
    except (SyntaxError, ValueError) as error:
        raise VerifyError(f"fixed code does not parse: {error}") from None
