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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from amp_clipfix.analysis import names
from amp_clipfix.analysis.parse import LargeModule, data_names, parse_module
from amp_clipfix.patterns import lazy

MIN_ELIDED_LINES = 50  # below this the module is fixed whole: nothing worth saving
HELPER_WORDS = frozenset(
    {names.GUARD_HELPER, names.FABRIC_UNSCALE_HELPER, names.MODULE_UNSCALE_HELPER}
)
WORD = lazy(r"[^\W\d]\w*")
LINE = lazy(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # lines as `ast` counts them
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
    elided = [(start, end, "") for start, end in runs]
    kept = [s for s in statements if not any(a <= s.line and s.end_line <= b for a, b in runs)]
    elided += literal_runs(module, kept, lines, spans)
    if sum(end - start + 1 for start, end, _ in elided) < MIN_ELIDED_LINES:
        return None
    return replaced(lines, sorted(elided))


def literal_runs(
    module: ast.Module,
    kept: Sequence[Statement],
    lines: Sequence[str],
    spans: Sequence[tuple[int, int]],
) -> list[tuple[int, int, str]]:
    """Inside the statements that stay (a large table the code reads: `TABLE = {...}` and
    `TABLE["precision"]`), the runs of whole lines that hold only literal elements of a dict,
    list, tuple or set display, no target site and no name: each becomes one element of the
    same kind (a string key, or a string), so the binding, the container and every name the
    codemods' scopes see are kept, and libcst reads one token for the run."""
    wanted = {(statement.line, statement.end_line) for statement in kept}
    found: list[tuple[int, int, str]] = []
    for node in module.body:
        end = node.end_lineno or node.lineno
        if (node.lineno, end) not in wanted or end - node.lineno + 1 < MIN_ELIDED_LINES:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Dict) and None not in inner.keys:
                pairs = [(key, value) for key, value in zip(inner.keys, inner.values)]
                elements = [(key, value) for key, value in pairs if key is not None]
                found += element_runs(inner, elements, ": 0,", lines, spans)
            elif isinstance(inner, (ast.List, ast.Tuple, ast.Set)):
                found += element_runs(inner, [(e, e) for e in inner.elts], ",", lines, spans)
    found.sort()
    outermost: list[tuple[int, int, str]] = []
    for run in found:  # a run inside another (a table's nested rows) goes with it
        if outermost and run[0] <= outermost[-1][1]:
            continue
        outermost.append(run)
    return outermost


TRAILING_COMMA = lazy(r"\s*,\s*(?:#.*)?\Z")


def element_runs(
    container: ast.expr,
    elements: Sequence[tuple[ast.expr, ast.expr]],
    suffix: str,
    lines: Sequence[str],
    spans: Sequence[tuple[int, int]],
) -> list[tuple[int, int, str]]:
    """The runs of `container`'s elements (first and last node of each) to elide: literal, on
    whole lines of their own (the first starts its line, the last ends it with a comma), at
    least two lines, holding no target site."""
    runs: list[tuple[int, int, str]] = []
    start: int | None = None  # the first line of the run being grown
    last_end = container.lineno  # where the previous element (or the opening bracket) ended
    for index, (first, last) in enumerate(elements):
        line, end = first.lineno, last.end_lineno or last.lineno
        fits = is_literal(first) and is_literal(last) and not overlaps_lines(line, end, spans)
        if not fits:
            start = None
        elif start is None and line > last_end and not lines[line - 1][: first.col_offset].strip():
            start = line
        following = elements[index + 1][0].lineno if index + 1 < len(elements) else None
        closing = container.end_lineno or end
        ends_line = (following is None and closing > end) or (
            following is not None and following > end
        )
        tail = lines[end - 1].rstrip("\r\n")[last.end_col_offset or 0 :]
        if start is not None and ends_line and TRAILING_COMMA.match(tail) and end > start:
            if runs and runs[-1][0] == start:
                runs[-1] = (start, end, suffix)
            else:
                runs.append((start, end, suffix))
        last_end = end
    return runs


def is_literal(node: ast.expr) -> bool:
    """A constant, or a display of constants (no name, call or f-string): what libcst would
    read as many nodes and a codemod never needs."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Constant):
            continue
        if isinstance(item, ast.UnaryOp) and isinstance(item.op, (ast.USub, ast.UAdd)):
            stack.append(item.operand)
        elif isinstance(item, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(item.elts)
        elif isinstance(item, ast.Dict) and None not in item.keys:
            stack.extend(key for key in item.keys if key is not None)
            stack.extend(item.values)
        else:
            return False
    return True


def overlaps_lines(line: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= end and line <= stop for start, stop in spans)


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


def replaced(lines: Sequence[str], runs: Sequence[tuple[int, int, str]]) -> Elided:
    """Each run's lines as one placeholder: a statement (`not` and a triple-quoted string), or
    with a suffix one element of a display (the string and `: 0,` in a dict, `,` in the
    others), indented as the run's first line."""
    parts: list[str] = []
    kept: list[tuple[str, str]] = []
    position = 0
    for number, (start, end, suffix) in enumerate(runs):
        parts.extend(lines[position : start - 1])
        original = lines[start - 1 : end]
        first = original[0]
        head = first[: len(first) - len(first.lstrip())] if suffix else "not "
        placeholder = [f'{head}"""{MARK} {number}{ending(first)}']
        placeholder += [ending(line) for line in original[1:-1]]
        placeholder.append('"""' + suffix + ending(original[-1]))
        parts.extend(placeholder)
        kept.append(("".join(placeholder), "".join(original)))
        position = end
    parts.extend(lines[position:])
    return Elided("".join(parts), tuple(kept))


def ending(line: str) -> str:
    """The line's own line break ("" on a last line without one)."""
    stripped = line.rstrip("\r\n")
    return line[len(stripped) :]
