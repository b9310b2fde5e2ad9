"""Give the codemods only the part of a large module they can change or look at.

libcst's tree, its position metadata and its walk cost ~100x `ast` per byte: a 1 MB module with
one site took a minute and a gigabyte to fix, although a fix edits a few lines. Before the
libcst parse, each run of top-level *data* statements (analysis/parse.py's `data_names`: plain
assignments and expressions) that holds no target site, shares no word with the rest of the
module (it binds nothing kept code reads and reads nothing kept code binds, so no dead-code
decision is made without one of a name's readers), reads no helper the fixes insert and is no
docstring is replaced by a placeholder of the same number of lines: `not` and a triple-quoted
string holding those lines' breaks (one string token for libcst, and no docstring, as `not`
comes first). Every other line is kept byte for byte, so the sites' (line, column) positions
still find their nodes, and to the codemods a placeholder is what the run was (simple
statements at top level, which neither start nor end the import section where helpers go).
After the fix each placeholder, found once and whole, is replaced by the run's own text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from amp_clipfix.analysis import names
from amp_clipfix.analysis.parse import LargeModule, data_names, parse_module

MIN_ELIDED_LINES = 50  # below this the module is fixed whole: nothing worth saving
HELPER_WORDS = frozenset(
    {names.GUARD_HELPER, names.FABRIC_UNSCALE_HELPER, names.MODULE_UNSCALE_HELPER}
)
WORD = re.compile(r"[^\W\d]\w*")
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # lines as `ast` counts them
MARK = "elided by amp-clipfix"


@dataclass(frozen=True)
class Statement:
    line: int
    end_line: int
    elidable: bool
    bound: tuple[str, ...] = ()


@dataclass(frozen=True)
class Elided:
    """The text the codemods see, and the runs (placeholder, original text) to put back."""

    text: str
    runs: tuple[tuple[str, str], ...]

    def restore(self, fixed: str) -> str | None:
        """The fixed module with every run back in place; None when a placeholder is not found
        exactly once, whole and at the start of a line (then the module is fixed whole)."""
        for placeholder, original in self.runs:
            at = fixed.find(placeholder)
            if at < 0 or fixed.find(placeholder, at + 1) >= 0:
                return None
            if at > 0 and fixed[at - 1] not in "\r\n":
                return None
            fixed = fixed[:at] + original + fixed[at + len(placeholder) :]
        return fixed


def elide(
    text: str, target_lines: Iterable[tuple[int, int]], module: ast.Module | None = None
) -> Elided | None:
    """The module with its elidable runs replaced, or None when nothing worth eliding (or the
    module does not parse with `ast`: it is then fixed whole, and fails there if it must).
    `module`: the `ast` tree the sites were read from, when the reader kept it."""
    if module is None:
        try:
            module = parse_module(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    lines = LINE.findall(text)
    statements = top_level(module, lines)
    spans = sorted(target_lines)
    for index, statement in enumerate(statements):
        if statement.elidable and overlaps(statement, spans):
            statements[index] = Statement(statement.line, statement.end_line, False)
    usable = hidden(statements, lines)
    runs: list[tuple[int, int]] = []
    for statement, hide in zip(statements, usable, strict=True):
        if not hide:
            continue
        if runs and only_blank_or_comments(lines, runs[-1][1], statement.line):
            runs[-1] = (runs[-1][0], statement.end_line)
        else:
            runs.append((statement.line, statement.end_line))
    runs = [run for run in runs if run[1] - run[0] + 1 >= 2]
    if sum(end - start + 1 for start, end in runs) < MIN_ELIDED_LINES:
        return None
    return replaced(lines, runs)


def hidden(statements: Sequence[Statement], lines: Sequence[str]) -> list[bool]:
    """Which statements a placeholder may hide: elidable ones that share no word with any kept
    statement, either way. A hidden statement binds nothing kept code reads (the sites' scopes
    stay whole) and reads nothing kept code binds, so no fix decides a name is dead (a
    `scaler = GradScaler(...)` line, an import: codemods/dead.py) from a view without one of its
    readers. Words, not names: a string or comment that holds a word keeps its statement too,
    which costs only speed. Keeping a statement adds its words, so this runs to a fixpoint."""
    words = [
        set(WORD.findall("".join(lines[statement.line - 1 : statement.end_line])))
        for statement in statements
    ]
    usable = [s.elidable and HELPER_WORDS.isdisjoint(w) for s, w in zip(statements, words)]
    kept_words = {word for hide, w in zip(usable, words) if not hide for word in w}
    changed = True
    while changed:
        changed = False
        for index, statement_words in enumerate(words):
            if usable[index] and not kept_words.isdisjoint(statement_words):
                usable[index] = False
                kept_words |= statement_words
                changed = True
    return usable


def top_level(module: ast.Module, lines: Sequence[str]) -> list[Statement]:
    """Every top-level statement the parse kept (a large module's pruned data statements by
    their lines), in order; only whole-line data statements, alone on their lines, are
    elidable, and statements whose lines are unknown are never part of a run."""
    found: list[Statement] = []
    for node in module.body:
        end = node.end_lineno or node.lineno
        bound = data_names(node)
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        elidable = bound is not None and not docstring and node.col_offset == 0
        found.append(Statement(node.lineno, end, elidable, bound or ()))
    if isinstance(module, LargeModule):
        for name, places in module.pruned.items():
            for place in places:
                found.append(Statement(place.line, place.end_line, place.column == 0, (name,)))
    found.sort(key=lambda statement: (statement.line, statement.end_line))
    merged: list[Statement] = []
    for statement in found:  # one statement binding several names is listed once per name
        if merged and (merged[-1].line, merged[-1].end_line) == (
            statement.line,
            statement.end_line,
        ):
            previous = merged[-1]
            bound = tuple(dict.fromkeys(previous.bound + statement.bound))
            merged[-1] = Statement(previous.line, previous.end_line, previous.elidable, bound)
            continue
        merged.append(statement)
    for index, statement in enumerate(merged):  # `a = 1; b = 2`: not alone on its lines
        shares = (index > 0 and merged[index - 1].end_line >= statement.line) or (
            index + 1 < len(merged) and merged[index + 1].line <= statement.end_line
        )
        if shares or statement.end_line > len(lines):
            merged[index] = Statement(statement.line, statement.end_line, False)
    return merged


def overlaps(statement: Statement, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= statement.end_line and statement.line <= end for start, end in spans)


def only_blank_or_comments(lines: Sequence[str], after: int, before: int) -> bool:
    """Lines strictly between two statements hold no other statement."""
    return all(
        not line.strip() or line.lstrip().startswith("#") for line in lines[after : before - 1]
    )


def replaced(lines: Sequence[str], runs: Sequence[tuple[int, int]]) -> Elided:
    parts: list[str] = []
    kept: list[tuple[str, str]] = []
    position = 0
    for number, (start, end) in enumerate(runs):
        parts.extend(lines[position : start - 1])
        original = lines[start - 1 : end]
        placeholder = [f'not """{MARK} {number}{ending(original[0])}']
        placeholder += [ending(line) for line in original[1:-1]]
        placeholder.append('"""' + ending(original[-1]))
        parts.extend(placeholder)
        kept.append(("".join(placeholder), "".join(original)))
        position = end
    parts.extend(lines[position:])
    return Elided("".join(parts), tuple(kept))


def ending(line: str) -> str:
    """The line's own line break ("" on a last line without one)."""
    stripped = line.rstrip("\r\n")
    return line[len(stripped) :]
