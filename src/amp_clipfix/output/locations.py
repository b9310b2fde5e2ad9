"""Where a finding is in the *file*: a notebook site knows its cell and its line in the cell, but
code scanning (SARIF), reviewdog and GitLab place results on lines of the `.ipynb` file itself.

The notebook is read again from disk (before any fix is written), and a cell line is mapped to
the line of the JSON string of the cell's `"source"` where that cell line starts.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.sources.notebook_json import source_value_offsets
from amp_clipfix.sources.text import SourceError, decode_source

if TYPE_CHECKING:  # models.py (dataclasses, inspect) only once a finding is shown
    from amp_clipfix.models import Site, Span


def file_span(site: Site) -> Span | None:
    """The site's span in file lines (columns dropped, as they are the JSON's), or None when it
    is not in a notebook or the notebook cannot be read again."""
    if site.cell is None or site.cell_span is None:
        return None
    first = notebook_file_line(str(site.path), site.cell, site.cell_span.line)
    last = notebook_file_line(str(site.path), site.cell, site.cell_span.end_line)
    if first is None or last is None:
        return None
    from amp_clipfix.models import Span

    return Span(first, 0, max(first, last), 0)


def _source_values(path: str) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    """Read once per version of the file (a later run in the same process may see it fixed)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return _read_source_values(path, status.st_mtime_ns, status.st_size)


@lru_cache(maxsize=256)
def _read_source_values(
    path: str, mtime_ns: int, size: int
) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    try:
        text = decode_source(Path(path), observed.read_bytes(path)).text
        return text, tuple(source_value_offsets(text))
    except (OSError, SourceError, ValueError):
        return None


def notebook_file_line(path: str, cell: int, line: int) -> int | None:
    """The file line where line `line` (1-based) of cell `cell` (1-based among all cells)
    starts."""
    read = _source_values(path)
    if read is None or not 1 <= cell <= len(read[1]):
        return None
    text, offsets = read
    start, end = offsets[cell - 1]
    if start < 0:
        return None
    return cell_line_in_value(text, start, end, line)


def cell_line_in_value(text: str, start: int, end: int, line: int) -> int:
    """Walk the strings of a `"source"` value (a list of strings, or one string)."""
    base = text.count("\n", 0, start) + 1
    value = text[start:end]
    current = 1  # the cell line at which the next string starts
    index = value.find('"')
    decoder_scan = json.decoder.scanstring  # type: ignore[attr-defined]
    while index >= 0:
        string, after = decoder_scan(value, index + 1)
        breaks = string.count("\n")
        last_starting = current + breaks - (1 if string.endswith("\n") else 0)
        if current <= line <= max(current, last_starting):
            return base + value.count("\n", 0, index)
        current += breaks
        index = value.find('"', after)
    return base + value.count("\n")
