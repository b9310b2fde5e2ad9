"""Read one document's sites: Python (a module or a notebook's cells) through the stdlib `ast`,
YAML configs through their own reader. Errors come back as one line with a location.

libcst is not used here: only a file a codemod changes is parsed with it (fixes/changes.py), so
a check run imports it only for a codemod's fix and a file libcst cannot read fails only then."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from amp_clipfix.analysis.config_sites import Settings, read_config
from amp_clipfix.analysis.parse import parse_module
from amp_clipfix.models import FileSites, Site, Span
from amp_clipfix.records import record, replace
from amp_clipfix.sources.base import Document, Language, SourceError

if TYPE_CHECKING:
    import libcst as cst


@record(frozen=True)
class ReadFile:
    """What reading a document gave: its sites, the `ast` tree they were read from (`syntax`,
    kept for the project resolution when the file has sites) and the libcst tree a fix
    transforms (parsed lazily, when a fix needs it)."""

    document: Document
    sites: FileSites
    tree: cst.Module | None = None
    syntax: ast.Module | None = None
    settings: Settings = None  # a YAML config's trainer settings, read with its sites


class ParseError(SourceError):
    """The code does not parse; `line`/`column` are where, `cell` the notebook cell if any."""

    def __init__(self, reason: str, line: int, column: int, cell: int | None) -> None:
        super().__init__(f"cannot parse: {reason}")
        self.line, self.column, self.cell = line, column, cell


def read_document(document: Document) -> ReadFile:
    """Sites of one document; raises SourceError (ParseError with a location)."""
    if document.language is Language.YAML:
        read = read_config(document.path, document.text)
        return ReadFile(document, read.sites, settings=read.settings)
    try:
        module = parse_module(document.text)
    except SyntaxError as error:
        cell, line = document.locate(error.lineno or 1)
        raise ParseError(error.msg, line, error.offset or 1, cell) from None
    except ValueError as error:  # a null byte
        raise SourceError(f"cannot parse: {error}") from None
    except (RecursionError, MemoryError):
        raise SourceError("cannot parse: the code is nested too deeply") from None
    from amp_clipfix.analysis.collect import collect_sites  # Python's sites: not a config's

    try:
        sites = collect_sites(document.path, document.text, module)
    except RecursionError:
        raise SourceError("cannot parse: the code is nested too deeply") from None
    if sites.sites and document.locate(1)[0] is not None:  # a notebook: sites name their cell
        sites = replace(sites, sites=tuple(in_cell(site, document) for site in sites.sites))
    return ReadFile(document, sites, syntax=module if sites.sites else None)


def in_cell(site: Site, document: Document) -> Site:
    """Give a notebook site the cell it is in and its span within that cell."""
    cell, line = document.locate(site.span.line)
    shift = site.span.line - line
    span = Span(line, site.span.column, site.span.end_line - shift, site.span.end_column)
    return replace(site, cell=cell, cell_span=span)
