"""The lines a fix wrote, laid out in the project's style (project/style.py).

Runs on a fixed module's text against its text before the fixes, and touches only lines the
fixes wrote (a line of the fixed text that the original did not have):

- a one-line statement that now exceeds the project's line length (a keyword added to a call, a
  call replaced by a longer one) is split the way ruff format and black split it: the outermost
  call's arguments on one indented line, or one per line with a trailing comma when they do not
  fit; a trailing comment follows the closing parenthesis;
- a call whose first line changed and whose continuation lines were aligned with its opening
  parenthesis (`f(a,\\n  b)`) is aligned with the new parenthesis;
- a string literal the fix wrote takes the project's quotes (`quote-style = "single"`) when its
  text holds neither quote nor backslash; docstrings keep double quotes (as ruff does).

Code the user wrote is never re-laid out: a project that is not formatted stays as it was. A line
whose part after the call is itself over the length (a long trailing comment) is left as it is.
"""

from __future__ import annotations

import ast
import io
import tokenize
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Iterator

from amp_clipfix.project.style import Style

INDENT = "    "


def laid_out(before: str, after: str, style: Style, tree: ast.Module | None = None) -> str:
    """`after` with the lines the fixes wrote in the project's style; `after` unchanged when
    it does not parse (the verification that follows reports it). `tree`: `after`'s `ast`
    tree when the caller parsed it already (the verification of the fixed text)."""
    if (
        before == after
        or "\r" in after.replace("\r\n", "")
        or ("\r\n" in after and "\n" in after.replace("\r\n", ""))
    ):
        return after  # a lone CR, or mixed line ends: the bytes are kept as they are
    old = Counter(before.splitlines())
    text = requoted(after, old, style) if style.quote == "single" else after
    if tree is None or text != after:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return after
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    replaced: dict[int, tuple[int, list[str]]] = {}  # first line -> (lines it stood for, new)
    written = [number for number, line in enumerate(lines, 1) if line not in old]
    for statement in statements_on(tree, written):
        if not isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return)):
            continue
        call = statement.value
        if not isinstance(call, ast.Call) or call.end_lineno is None:
            continue
        first = statement.lineno - 1
        if lines[first] in old:
            continue
        if statement.end_lineno == statement.lineno:
            split = split_call(lines[first], call, style.line_length)
            if split is not None:
                replaced[first] = (1, split)
        else:
            aligned = realigned(lines, statement, call)
            if aligned is not None:
                replaced[first] = (len(aligned), aligned)
    out: list[str] = []
    index = 0
    while index < len(lines):
        count, new = replaced.get(index, (1, [lines[index]]))
        out.extend(new)
        index += count
    return newline.join(out)


def statements_on(tree: ast.Module, written: list[int]) -> Iterator[ast.AST]:
    """`ast.walk(tree)`'s nodes in its order, less those that cannot be a statement starting
    on a `written` line (sorted line numbers): no statement is inside an expression, and a
    statement's inner statements start on its own lines, so a statement none of whose lines
    was written is passed with all it holds (a module's untouched functions and classes)."""
    pending: deque[ast.AST] = deque([tree])
    while pending:
        node = pending.popleft()
        if isinstance(node, ast.expr):
            continue
        if isinstance(node, ast.stmt):
            at = bisect_left(written, node.lineno)
            if at == len(written) or written[at] > (node.end_lineno or node.lineno):
                continue
        pending.extend(ast.iter_child_nodes(node))
        yield node


def argument_nodes(call: ast.Call) -> list[ast.expr | ast.keyword]:
    nodes: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    return sorted(nodes, key=lambda node: (node.lineno, node.col_offset))


def width(line: str) -> int:
    """Columns as ruff's E501 counts them: a tab is as wide as an indent (4)."""
    return len(line.expandtabs(4))


def split_call(line: str, call: ast.Call, limit: int) -> list[str] | None:
    """`f(a, b)  # c` longer than `limit`, split as ruff format does; None when it fits or the
    call is not the line's last bracket."""
    if width(line.rstrip()) <= limit or call.end_col_offset is None or not line.isascii():
        return None  # (ast's columns count UTF-8 bytes: only an ASCII line is cut by them)
    arguments = argument_nodes(call)
    if not arguments or any(a.end_lineno != call.lineno for a in arguments):
        return None
    if any(isinstance(a, ast.GeneratorExp) for a in arguments):
        return None  # `f(x for x in y)`: a bare generator takes no trailing comma
    head_end = arguments[0].col_offset
    opening = line.rfind("(", 0, head_end)
    closing = call.end_col_offset - 1
    if opening < 0 or line[closing] != ")" or line[opening + 1 : head_end].strip():
        return None
    indent = line[: len(line) - len(line.lstrip())]
    inner = indent + ("\t" if indent.startswith("\t") else INDENT)
    rest = line[closing:]  # `)` and anything after it (a comment, `:`)
    if width(indent + rest) > limit:
        return None  # what follows the call is too long by itself: splitting gains nothing
    segments = [line[a.col_offset : a.end_col_offset] for a in arguments]
    together = ", ".join(segments)
    head = line[: opening + 1]
    if width(inner + together) <= limit and not line[:closing].rstrip().endswith(","):
        return [head, inner + together, indent + rest]
    return [head, *(inner + segment + "," for segment in segments), indent + rest]


def realigned(lines: list[str], statement: ast.stmt, call: ast.Call) -> list[str] | None:
    """A call laid out with its arguments aligned to the opening parenthesis (`f(a,` then
    `  b)`) whose first line the fix changed: the continuation lines moved to the new column."""
    arguments = argument_nodes(call)
    if not arguments or arguments[0].lineno != call.lineno or call.end_lineno is None:
        return None
    first = lines[statement.lineno - 1]
    if not first.isascii():
        return None
    opening = first.rfind("(", 0, arguments[0].col_offset)
    if opening < 0 or first[opening + 1 : arguments[0].col_offset].strip():
        return None
    column = opening + 1
    following = lines[statement.lineno : call.end_lineno]
    indents = {len(line) - len(line.lstrip()) for line in following if line.strip()}
    starts = {a.col_offset for a in arguments if a.lineno > call.lineno}
    if len(indents) != 1 or indents == {column} or not starts or starts != indents:
        return None  # not aligned to a parenthesis, or aligned already
    old = indents.pop()
    if statement.end_lineno != call.end_lineno or any(
        "\t" in line[:old] for line in [first, *following] if line.strip()
    ):
        return None
    moved = [" " * column + line[old:] if line.strip() else line for line in following]
    return [first, *moved]


def requoted(text: str, old: Counter[str], style: Style) -> str:
    """The one-line string literals on new lines in the project's quotes."""
    quote = style.quote_char
    other = '"' if quote == "'" else "'"
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    for token in tokens:
        if token.type != tokenize.STRING or token.start[0] != token.end[0]:
            continue
        row, start = token.start
        if lines[row - 1].rstrip("\r\n") in old:
            continue
        literal = token.string
        prefix = literal[: len(literal) - len(literal.lstrip("rRbBuUfF"))]
        body = literal[len(prefix) :]
        if body[:3] in ('"""', "'''") or body[:1] != other or "\\" in body:
            continue
        inner = body[1:-1]
        if quote in inner or other in inner:
            continue
        edits.append((row, start, token.end[1], prefix + quote + inner + quote))
    for row, start, end, new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "".join(lines)
