"""Apply the text edits of rules with their own fixes (rules/base.py `RuleFix`).

Edits are made from the tree the search read, in the document's coordinates (1-based lines,
character columns). They are applied before the codemods of the other rules, whose target
positions are then moved past them (`moved`), so both kinds of fix meet in one file in one run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from amp_clipfix.models import Edit, Span
from amp_clipfix.sources.base import VerifyError
from amp_clipfix.sources.text import line_starts


def ordered(edits: Iterable[Edit]) -> list[Edit]:
    """Distinct edits by position (insertions at one place in the order given); two that
    overlap cannot both be made."""
    # dict.fromkeys, not set: two inserts at one place keep the order the fixes gave them
    # (a set ordered them by string hash, which changes from run to run)
    unique = sorted(
        dict.fromkeys(edits), key=lambda e: (e.span.line, e.span.column, e.span.end_line)
    )
    for before, after in zip(unique, unique[1:]):
        if (before.span.end_line, before.span.end_column) > (after.span.line, after.span.column):
            raise VerifyError("two fixes change the same code; not fixed")
    return unique


def offset(starts: Sequence[int], line: int, column: int) -> int:
    return starts[line - 1] + column


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """The text with every edit made (a later edit never moves an earlier one's position)."""
    starts = line_starts(text)
    out, last = [], 0
    for edit in ordered(edits):
        start = offset(starts, edit.span.line, edit.span.column)
        end = offset(starts, edit.span.end_line, edit.span.end_column)
        out += [text[last:start], edit.replacement]
        last = end
    out.append(text[last:])
    return "".join(out)


def moved(edits: Sequence[Edit], line: int, column: int) -> tuple[int, int]:
    """Where a position outside every edit is after the edits: lines shift by the lines the
    edits before it add or remove, columns by what an edit ending on its line changes."""
    new_line, new_column = line, column
    for edit in edits:
        span = edit.span
        if (span.end_line, span.end_column) > (line, column):
            continue
        added = edit.replacement.count("\n")
        new_line += added - (span.end_line - span.line)
        if span.end_line == line:
            tail = edit.replacement.rsplit("\n", 1)[-1]
            first = span.column if added == 0 else 0
            new_column += first + len(tail) - span.end_column
    return new_line, new_column


def moved_span(edits: Sequence[Edit], span: Span) -> Span:
    line, column = moved(edits, span.line, span.column)
    end_line, end_column = moved(edits, span.end_line, span.end_column)
    return Span(line, column, end_line, end_column)
