"""Read one module's sites that take part in the clipping failure, with the stdlib `ast`.

Names are resolved by scope (analysis/scopes.py gives the qualified names libcst's
QualifiedNameProvider gave), never by text, so aliases and `from ... import ... as` forms are
recognised and look-alikes (`numpy`, `torchmetrics`) are not. Reading with `ast` keeps a check
run free of libcst: only files a fix changes are parsed with it. Linking sites into findings
happens later, per project (see `link.py`).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.collect_calls import CallCollector
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.suppression import suppressed_codes
from amp_clipfix.models import ConfigModel, FileSites, FitCall, Site
from amp_clipfix.records import replace

DEEPEST = 20_000  # Python-level recursion only (3.11 keeps no C frames for it)


def collect_sites(
    path: Path,
    text: str,
    tree: ast.Module | None = None,
    callees: dict[tuple[int, int], frozenset[str]] | None = None,
) -> FileSites:
    """Collect the sites of one module (`tree` is `ast.parse(text)` when already at hand);
    `callees` are the qualified names the project evaluator gave the callees of candidate calls
    (line, column), which the file's imports do not name."""
    if tree is None:
        tree = ast.parse(text)
    source = SourceText(text, tree)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEPEST))  # the visitor recurses once per nesting level
    try:
        collector = SiteCollector(path, source, tree)
        collector.callees = callees or {}
        collector.candidates = []
        collector.config_models = []
        collector.visit(tree)
    finally:
        sys.setrecursionlimit(limit)
    sites = collector.sites
    if sites:
        suppressions = comment_suppressions(source, tree)
        sites = [with_suppressions(site, suppressions) for site in sites]
    return FileSites(
        path=path,
        sites=tuple(sites),
        classes=tuple(collector.classes),
        has_guard_helper=collector.has_guard_helper,
        candidates=tuple(collector.candidates),
        fits=tuple(
            FitCall(names.CLI_TRAINER, ConfigModel(name)) for name in collector.config_models
        ),
    )


def with_suppressions(site: Site, suppressions: dict[int, frozenset[str]]) -> Site:
    lines = range(site.span.line, site.span.end_line + 1)
    codes = frozenset().union(*(suppressions.get(line, ()) for line in lines))
    return replace(site, suppressed_codes=codes) if codes else site


class Suppressions(dict[int, frozenset[str]]):
    """Line -> codes its comment silences, each line read when a site first asks for it
    (`with_suppressions`): a site's lines are a few of its file's. `ast` keeps no comments: a
    line is read further only when the text from its first `#` could silence something, and
    then from the first `#` that is not inside a string literal (the tree's strings are found
    once, and only for a file where some line asked could silence)."""

    def __init__(self, source: SourceText, tree: ast.Module) -> None:
        super().__init__()
        self.source, self.tree = source, tree
        self.strings: list[Extent] | None = None

    def __missing__(self, number: int) -> frozenset[str]:
        codes: frozenset[str] = frozenset()
        line = self.source.line(number) if 1 <= number <= len(self.source.line_starts) else ""
        first = line.find("#")
        if first >= 0 and suppressed_codes(line[first:]):
            if self.strings is None:
                self.strings = string_extents(self.tree)
            for column, char in enumerate(line):
                if char == "#" and not in_string(self.strings, number, len(line[:column].encode())):
                    codes = suppressed_codes(line[column:])
                    break
        self[number] = codes
        return codes

    def get(self, number: int, default: object = None) -> frozenset[str]:
        return self[number]


class LineSuppressions(dict[int, frozenset[str]]):
    """`Suppressions` of a module whose text (`SourceText`, `made`) is made only when a line
    asked holds a `#`: a line without one silences nothing (`Suppressions.__missing__`), and
    most sites' lines hold none. `lines`: the module's UTF-8 lines as the summary keeps them
    (the same lines, a `#` byte being a `#` character in UTF-8)."""

    def __init__(
        self, lines: Sequence[bytes], made: Callable[[], dict[int, frozenset[str]]]
    ) -> None:
        super().__init__()
        self.lines, self.made = lines, made
        self.whole: dict[int, frozenset[str]] | None = None

    def __missing__(self, number: int) -> frozenset[str]:
        codes: frozenset[str] = frozenset()
        if 1 <= number <= len(self.lines) and b"#" in self.lines[number - 1]:
            if self.whole is None:
                self.whole = self.made()
            codes = self.whole.get(number, frozenset())
        self[number] = codes
        return codes

    def get(self, number: int, default: object = None) -> frozenset[str]:
        return self[number]


def comment_suppressions(source: SourceText, tree: ast.Module) -> dict[int, frozenset[str]]:
    """The file's `Suppressions`, read as its sites ask."""
    return Suppressions(source, tree)


Extent = tuple[tuple[int, int], tuple[int, int]]


def string_extents(tree: ast.Module) -> list[Extent]:
    extents = []
    for node in walk(tree):
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
        ):
            end_line = node.end_lineno or node.lineno
            extents.append(((node.lineno, node.col_offset), (end_line, node.end_col_offset or 0)))
    return extents


def in_string(extents: list[Extent], line: int, byte_column: int) -> bool:
    return any(start <= (line, byte_column) < end for start, end in extents)


class SiteCollector(CallCollector):
    """Every site of one module: the walk (collect_walk.py) and the calls it reads
    (collect_calls.py)."""
