"""Read one document's sites: Python (a module or a notebook's cells) through libcst, YAML
configs through their own reader. Errors come back as one line with a location."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.models import FileSites, Site, Span
from amp_clipfix.sources.base import Document, Language, SourceError
from amp_clipfix.sources.yaml import collect_config_sites

if TYPE_CHECKING:
    import libcst as cst


@dataclass(frozen=True)
class ReadFile:
    """What reading a document gave: its sites, and the libcst tree a fix will transform (kept
    only when the file has sites, since only those files can be fixed)."""

    document: Document
    sites: FileSites
    tree: cst.Module | None = None


class ParseError(SourceError):
    """The code does not parse; `line`/`column` are where, `cell` the notebook cell if any."""

    def __init__(self, reason: str, line: int, column: int, cell: int | None) -> None:
        super().__init__(f"cannot parse: {reason}")
        self.line, self.column, self.cell = line, column, cell


def read_document(document: Document) -> ReadFile:
    """Sites of one document; raises SourceError (ParseError with a location)."""
    if document.language is Language.YAML:
        return ReadFile(document, collect_config_sites(document.path, document.text))
    import libcst as cst  # a run that parses no Python never pays for importing libcst

    try:
        module = cst.parse_module(document.text)
    except cst.ParserSyntaxError as error:
        line, column, reason = syntax_error(document.text, error)
        cell, line = document.locate(line)
        raise ParseError(reason, line, column, cell) from None
    except RecursionError:
        raise SourceError("cannot parse: the code is nested too deeply") from None
    sites = collect_sites(document.path, module)
    if sites.sites and document.locate(1)[0] is not None:  # a notebook: sites name their cell
        sites = replace(sites, sites=tuple(in_cell(site, document) for site in sites.sites))
    return ReadFile(document, sites, module if sites.sites else None)


def in_cell(site: Site, document: Document) -> Site:
    """Give a notebook site the cell it is in and its span within that cell."""
    cell, line = document.locate(site.span.line)
    shift = site.span.line - line
    span = Span(line, site.span.column, site.span.end_line - shift, site.span.end_column)
    return replace(site, cell=cell, cell_span=span)


def syntax_error(text: str, error: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """(line, column, reason) of a parse failure, in Python's words where it has them."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        return python_error.lineno or 1, python_error.offset or 1, python_error.msg
    except (ValueError, RecursionError):
        pass
    match = re.search(r"error at (\d+):(\d+): (.*)", error.message)
    if match is None:
        return error.raw_line, error.raw_column + 1, " ".join(error.message.split())
    line, column, reason = match.groups()
    return int(line), int(column) + 1, reason
