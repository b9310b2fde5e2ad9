"""Parse a module with the stdlib `ast`; a very large one in pieces, keeping what can matter.

`ast.parse` of a 5 MB module peaks near 850 MB and its tree keeps about 770 MB alive: Python
objects cost ~80 bytes per byte of plain top-level data. A large module is therefore parsed in
pieces that end at top-level statement boundaries, and a top-level statement that is only data
(an assignment or expression without calls, lambdas or assignment expressions) is kept
only when code that is kept names what it binds. Such a statement can be no site and call
nothing, so the sites and the calls are the same; what it binds stays findable
(`LargeModule.pruned`), and `Summary` parses it again when the resolution asks for the name
(another module importing a constant).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Sequence

from amp_clipfix.analysis.nodes import target_names, walk
from amp_clipfix.patterns import lazy
from amp_clipfix.records import record
from amp_clipfix.sources.text import line_starts

LARGE_MODULE = 1_000_000  # characters: smaller modules are parsed whole
PIECE = 250_000  # characters per parse: the parser's transient memory is ~150x a piece

# A line that starts a new top-level statement if the text before it parses: code in column 0
# that is not a clause continuing a compound statement. A boundary inside a string or brackets
# is never taken, since the piece before it then fails to parse and grows to the next one.
STATEMENT_START = lazy(r"^(?![ \t\f\r\n#)\]}]|(?:else|elif|except|finally)\b)", re.MULTILINE)
# Text that may hold a call, a lambda or an assignment expression (over-approximated: a
# parenthesis in a string keeps the statement too, which is only safe).
MAY_DO_SOMETHING = lazy(r"\(|:=|\blambda\b")
WORD = lazy(r"[^\W\d]\w*")
PLAIN_TARGET = (ast.Name, ast.Tuple, ast.List, ast.Starred)  # binds names, nothing else


@record(frozen=True, order=True)
class Lines:
    """Where a pruned statement is: its first and last line, and its column (`a = 1; b = 2`)."""

    line: int
    end_line: int
    column: int


class LargeModule(ast.Module):
    """A module parsed in pieces: `body` holds the statements kept, `pruned` the data
    statements left out, by the names they bind."""

    pruned: dict[str, list[Lines]]


def parse_module(text: str, large: int = LARGE_MODULE, piece: int = PIECE) -> ast.Module:
    """`ast.parse(text)`, in pieces of about `piece` characters when `text` has `large`
    characters or more; raises what `ast.parse` raises, with the line of the whole module."""
    if len(text) < large:
        return ast.parse(text)
    return LargeReader(text, piece).read()


class LargeReader:
    def __init__(self, text: str, piece: int) -> None:
        self.text, self.piece = text, piece
        self.line_starts = line_starts(text)
        self.boundaries = [match.start() for match in STATEMENT_START.finditer(text)]
        self.kept: list[ast.stmt] = []
        self.data: list[tuple[Lines, tuple[str, ...]]] = []  # prunable, with the names bound

    def read(self) -> LargeModule:
        start = 0
        while start < len(self.text):
            start = self.read_piece(start)
        module = LargeModule(body=[], type_ignores=[])
        module.pruned = {}
        self.keep_named_data(module)
        module.body.sort(key=lambda statement: (statement.lineno, statement.col_offset))
        return module

    def read_piece(self, start: int) -> int:
        """Parse from `start` to a statement boundary, growing the piece until it parses;
        returns where the next piece starts. The piece is parsed after as many empty lines as
        come before it, so its nodes have the lines of the whole module."""
        above = "\n" * (self.line_of(start) - 1)
        size = self.piece
        while True:
            end = self.boundary_after(start + size)
            try:
                piece = ast.parse(above + self.text[start:end])
            except SyntaxError:
                if end < len(self.text):
                    size *= 2
                    continue
                raise
            self.sort(piece.body)
            return end

    def boundary_after(self, offset: int) -> int:
        index = bisect.bisect_left(self.boundaries, offset)
        return self.boundaries[index] if index < len(self.boundaries) else len(self.text)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def sort(self, statements: list[ast.stmt]) -> None:
        """Keep code; note data statements (their nodes are dropped with the piece). Data on a
        line with code stays (`x = "# noqa"; opt = AdamW(...)`): a site's comment is read from
        its line, skipping the strings on it."""
        data = [self.data_names(statement) for statement in statements]
        code_lines = {
            line
            for statement, names in zip(statements, data)
            if names is None
            for line in (statement.lineno, statement.end_lineno or statement.lineno)
        }
        for statement, names in zip(statements, data):
            end_line = statement.end_lineno or statement.lineno
            if names is None or statement.lineno in code_lines or end_line in code_lines:
                self.kept.append(statement)
            else:
                self.data.append((Lines(statement.lineno, end_line, statement.col_offset), names))

    def data_names(self, statement: ast.stmt) -> tuple[str, ...] | None:
        """What a data statement binds; None for code."""
        names = data_names(statement)
        return None if names is None or MAY_DO_SOMETHING.search(self.source(statement)) else names

    def source(self, statement: ast.stmt) -> str:
        """The whole lines a statement spans (enough to search for words)."""
        return self.lines(statement.lineno, statement.end_lineno or statement.lineno)

    def lines(self, first: int, last: int) -> str:
        end = self.line_starts[last] if last < len(self.line_starts) else len(self.text)
        return self.text[self.line_starts[first - 1] : end]

    def keep_named_data(self, module: LargeModule) -> None:
        """Data statements whose names kept code mentions are kept too (and what they name, in
        turn): the sites' scopes and the values followed inside the module stay complete."""
        by_name: dict[str, list[int]] = {}
        for index, (_, names) in enumerate(self.data):
            for name in names:
                by_name.setdefault(name, []).append(index)
        words: set[str] = set()
        for statement in self.kept:
            words.update(WORD.findall(self.source(statement)))
        pending = [word for word in words if word in by_name]
        wanted: set[int] = set()
        while pending:
            for index in by_name.pop(pending.pop(), []):
                if index in wanted:
                    continue
                wanted.add(index)
                place = self.data[index][0]
                for word in WORD.findall(self.lines(place.line, place.end_line)):
                    if word not in words:
                        words.add(word)
                        if word in by_name:
                            pending.append(word)
        module.body.extend(self.kept)
        module.body.extend(self.reparse(sorted(self.data[index][0] for index in wanted)))
        for index, (place, names) in enumerate(self.data):
            if index not in wanted:
                for name in names:
                    module.pruned.setdefault(name, []).append(place)

    def reparse(self, places: list[Lines]) -> list[ast.stmt]:
        """Parse the kept data statements again, a run of adjacent ones at a time."""
        found: list[ast.stmt] = []
        index = 0
        while index < len(places):
            last = index
            while last + 1 < len(places) and places[last + 1].line <= places[last].end_line + 1:
                last += 1
            run = places[index : last + 1]
            found.extend(statements_at(self.lines(run[0].line, run[-1].end_line), run))
            index = last + 1
        return found


def statements_at(text: str, places: list[Lines]) -> list[ast.stmt]:
    """The statements of `text` (the whole lines from `places[0].line`) that start at one of
    `places`, with the lines of the whole module."""
    starts = {(place.line, place.column) for place in places}
    try:
        tree = ast.parse("\n" * (places[0].line - 1) + text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # `a = 1; b = (` ...
        return []
    return [s for s in tree.body if (s.lineno, s.col_offset) in starts]


def data_names(statement: ast.stmt) -> tuple[str, ...] | None:
    """The names a top-level data statement binds (`()` for an expression), or None when it
    is not one: only plain names are bound (`x["fused"] = ...` and `self.x = ...` are code)."""
    if isinstance(statement, ast.Expr):
        return ()
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    else:
        return None
    if not all(isinstance(node, PLAIN_TARGET) for target in targets for node in walk(target)):
        return None
    return tuple(name for target in targets for name in target_names(target))


def pruned_statements(text_lines: Sequence[bytes], places: list[Lines]) -> list[ast.stmt]:
    """The data statements at `places`, parsed again from a module's UTF-8 lines."""
    found: list[ast.stmt] = []
    for place in places:
        text = b"\n".join(text_lines[place.line - 1 : place.end_line]).decode("utf-8", "replace")
        found.extend(statements_at(text, [place]))
    return found
