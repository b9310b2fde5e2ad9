"""Show one file's diff on a terminal with rich.

Source lines are user code, so they only ever go into `rich.text.Text` objects: a `[red]` in the
code is printed literally instead of being read as markup.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len, chop_cells
from rich.text import Text

from amp_clipfix.output.diff import DiffLine, Hunk
from amp_clipfix.output.safe_text import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["render_file_diff"]

_STYLES = {" ": "dim", "-": "red", "+": "green"}


def _display_rows(line: DiffLine, encoding: str) -> list[str]:
    """Decode a line for display: ending stripped, tabs expanded, control characters escaped.

    A line holding bare CRs (old Mac files, which git sees as one line) is shown as several rows.
    """
    text = line.text.decode(encoding, errors="replace")
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    rows = text.split("\r") if text else [""]
    return [terminal_safe(row.expandtabs(4)) for row in rows]


def _fold(row: str, width: int) -> list[str]:
    """`row` cut into pieces of at most `width` terminal cells (wide characters count two)."""
    if cell_len(row) <= width:
        return [row]
    return chop_cells(row, width)


def render_file_diff(
    console: Console,
    path: str,
    hunks: Sequence[Hunk],
    encoding: str,
    notes: Sequence[str] = (),
) -> None:
    """Print `path` in bold, its notes, then its hunks with old/new line numbers in a gutter.

    Prints nothing when `hunks` is empty, so callers can render every file unconditionally.
    """
    if not hunks:
        return
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"  # an unknown encoding name must not stop the report

    # Wide enough for the largest line number of either side.
    width = len(str(max(max(h.old_start + h.old_count, h.new_start + h.new_count) for h in hunks)))
    blank = " " * width

    # A row longer than the terminal is folded onto rows of its own under a blank gutter
    # (the terminal's own wrapping would run the code into the line numbers).
    room = max(console.width - len(f"{blank} {blank} ") - 1, 8)
    console.print(Text(terminal_safe(path), style="bold"))
    for note in notes:
        console.print(Text("  " + terminal_safe(note)))
    for hunk in hunks:
        header = f"@@ -{hunk.old_start},{hunk.old_count} +{hunk.new_start},{hunk.new_count} @@"
        console.print(Text(header, style="cyan"))
        old_no, new_no = hunk.old_start, hunk.new_start
        for line in hunk.lines:
            old_col = f"{old_no:>{width}}" if line.tag != "+" else blank
            new_col = f"{new_no:>{width}}" if line.tag != "-" else blank
            style = _STYLES[line.tag]
            pieces = [piece for row in _display_rows(line, encoding) for piece in _fold(row, room)]
            for i, piece in enumerate(pieces):
                gutter = f"{old_col} {new_col} " if i == 0 else f"{blank} {blank} "
                console.print(
                    Text.assemble((gutter, "dim"), (line.tag + piece, style)), soft_wrap=True
                )
            if not line.text.endswith(b"\n"):
                console.print(Text(f"{blank} {blank}  \\ No newline at end of file", style="dim"))
            old_no += line.tag != "+"
            new_no += line.tag != "-"
