"""Small readers of stdlib `ast` nodes for the collector, giving what libcst gave before.

Positions and code come back in libcst's terms, since sites, fix targets and finding text are
compared and shown in them: columns count characters (ast counts UTF-8 bytes), a node's span
leaves out its own parentheses but its code keeps them (`fused=(True)` reads `(True)`).
"""

from __future__ import annotations

import ast
import io
from collections.abc import Iterable
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.nodes import literal_text
from amp_clipfix.analysis.summary import Summary, TextLines
from amp_clipfix.models import Span
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.text import LINE_BREAK, line_starts

BLANK = " \t\x0c"


class SourceText:
    """The text a tree was parsed from, to turn ast positions into libcst's."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.summary = Summary(Path(), "", False, tree, TextLines(text.encode("utf-8")))
        self.line_starts = line_starts(text)

    def span(self, node: ast.AST) -> Span:
        span = self.summary.span(node)
        if isinstance(node, ast.Tuple) and self.is_parenthesised_tuple(node):
            # ast counts a tuple's parentheses as its own, libcst's position does not
            return Span(span.line, span.column + 1, span.end_line, span.end_column - 1)
        return span

    def is_parenthesised_tuple(self, node: ast.Tuple) -> bool:
        start, end = self.bounds(node)
        return self.text[start : start + 1] == "(" and self.text[end - 1 : end] == ")"

    def indentation(self, line: int) -> str:
        text = self.line(line)
        return text[: len(text) - len(text.lstrip(BLANK))]

    def dedented(self, code: str, indentation: str) -> str:
        """libcst prints a node alone without the indentation of the block it sits in: lines
        that continue it inside brackets lose that much of their leading whitespace."""
        if not indentation or "\n" not in code and "\r" not in code:
            return code
        lines = LINE_BREAK.split(code)
        breaks = LINE_BREAK.findall(code)
        out = [lines[0]]
        for line_break, line in zip(breaks, lines[1:]):
            out.append(
                line_break + (line[len(indentation) :] if line.startswith(indentation) else line)
            )
        return "".join(out)

    def offset(self, line: int, byte_column: int) -> int:
        return self.line_starts[line - 1] + self.summary.column(line, byte_column)

    def line(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def bounds(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def code(self, node: ast.AST, sole_argument: bool = False, indentation: str = "") -> str:
        """The node's code as libcst prints it: with its own parentheses (those of a call
        around its only argument are the call's), without its block's indentation."""
        start, end = self.with_parentheses(*self.bounds(node), sole_argument)
        return self.dedented(self.text[start:end], indentation)

    def argument_code(self, node: ast.keyword, indentation: str = "") -> str:
        """A `**spread` argument as libcst prints it: up to the next argument, comma and
        whitespace included."""
        start, end = self.bounds(node)
        end = self.skip_forward(end)
        if self.text[end : end + 1] == ",":
            end = self.skip_forward(end + 1)
        return self.dedented(self.text[start:end], indentation)

    def with_parentheses(self, start: int, end: int, sole_argument: bool) -> tuple[int, int]:
        pairs: list[tuple[int, int]] = [(start, end)]
        while True:
            before, after = self.skip_backward(start), self.skip_forward(end)
            if before == 0 or self.text[before - 1] != "(" or self.text[after : after + 1] != ")":
                break
            start, end = before - 1, after + 1
            pairs.append((start, end))
        if sole_argument and len(pairs) > 1:
            pairs.pop()
        return pairs[-1]

    def skip_forward(self, index: int) -> int:
        """The next index that holds code: past blanks, comments and line breaks."""
        text = self.text
        while index < len(text):
            char = text[index]
            if char in BLANK or char in "\r\n":
                index += 1
            elif char == "#":
                match = LINE_BREAK.search(text, index)
                index = match.start() if match else len(text)
            elif char == "\\" and text[index + 1 : index + 2] in ("\r", "\n"):
                index += 1
            else:
                break
        return index

    def skip_backward(self, index: int) -> int:
        """Just after the previous code: back past blanks, line breaks and comments."""
        text = self.text
        while index > 0:
            char = text[index - 1]
            if char in BLANK:
                index -= 1
            elif char in "\r\n":
                line_start = text.rfind("\n", 0, index - 1)
                line_start = max(line_start, text.rfind("\r", 0, index - 1)) + 1
                line = text[line_start : index - 1].rstrip("\r")
                comment = comment_start(line)
                if comment is not None:
                    line = line[:comment]
                if line.endswith("\\"):
                    line = line[:-1]
                index = line_start + len(line)
            else:
                break
        return index

    def alone_on_line(self, statement: ast.stmt) -> bool:
        """libcst's one-statement SimpleStatementLine: nothing before the statement on its
        first line (no compound header, no `a; b`), nothing but `;` and a comment after."""
        start, end = self.bounds(statement)
        line_start = self.line_starts[statement.lineno - 1]
        if self.text[line_start:start].strip(BLANK):
            return False
        rest = self.line(statement.end_lineno or statement.lineno)
        tail_start = end - self.line_starts[(statement.end_lineno or statement.lineno) - 1]
        tail = rest[tail_start:].lstrip(BLANK)
        if tail.startswith(";"):
            tail = tail[1:].lstrip(BLANK)
        return not tail or tail.startswith("#")


def comment_start(line: str) -> int | None:
    """Where a comment starts in one line of code, quotes respected; None without one."""
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote is None:
            if char == "#":
                return index
            if char in "'\"":
                triple = line[index : index + 3]
                quote = triple if triple in ("'''", '"""') else char
                index += len(quote)
                continue
        elif char == "\\":
            index += 2
            continue
        elif line.startswith(quote, index):
            index += len(quote)
            quote = None
            continue
        index += 1
    return None


# A literal quoted once (a prefix, one quote character on each side and none, nor a backslash
# or a line break, between), inside as many parentheses as close it: one string token, told
# without tokenize, whose first use compiles its pattern (~2 ms of a small project's run).
ONE_STRING = lazy(
    r"""(?P<open>(?:\([ \t\f\r\n]*)*)[rRbBuU]{0,2}(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')"""
    r"(?P<close>(?:[ \t\f\r\n]*\))*)"
)


def string_token_count(code: str) -> int:
    """How many string tokens make up a literal: more than one is an implicit concatenation."""
    quoted = ONE_STRING.fullmatch(code)
    if quoted and quoted["open"].count("(") == quoted["close"].count(")"):
        return 1
    import tokenize  # here: a run whose literals are all quoted once never imports it

    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return sum(1 for token in tokens if token.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return 0


def literal_value(node: ast.AST, source: SourceText) -> str | None:
    """The value of a simple literal as Lightning would compare it (`16` -> "16"), else None;
    what libcst's reader gave (no f-strings, no implicitly joined strings)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, int, float)):
            return literal_text(value)
        if isinstance(value, (str, bytes)) and string_token_count(source.code(node)) == 1:
            return str(value)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal_value(node.operand, source)
        return None if inner is None else f"-{inner}"
    return None


def keyword_arg(call: ast.Call, keyword: str) -> ast.keyword | None:
    for arg in call.keywords:
        if arg.arg == keyword:
            return arg
    return None


def positional_args(call: ast.Call) -> list[ast.expr]:
    return [arg for arg in call.args if not isinstance(arg, ast.Starred)]


def positional_or_keyword(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    found = keyword_arg(call, keyword)
    if found is not None:
        return found.value
    positional = positional_args(call)
    return positional[index] if index < len(positional) else None


def is_sole_argument(call: ast.Call, node: ast.AST) -> bool:
    return len(call.args) + len(call.keywords) == 1 and bool(call.args) and call.args[0] is node


def star_kwargs(call: ast.Call) -> list[ast.keyword]:
    return [arg for arg in call.keywords if arg.arg is None]


def namespace_argument(call: ast.Call, qualified: Iterable[str]) -> ast.expr | None:
    """The argparse Namespace a call passes for its keyword arguments
    (`Trainer.from_argparse_args(args)`), when its callee is such an entry."""
    for name in qualified:
        entry = names.entry_of(name)
        if entry is not None and entry.namespace is not None and len(call.args) > entry.namespace:
            argument = call.args[entry.namespace]
            return None if isinstance(argument, ast.Starred) else argument
    return None


def clip_call_of(statement: ast.stmt) -> ast.Call | None:
    """The call a guardable statement makes: `x.clip_gradients(...)` alone or assigned."""
    if isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) and isinstance(
        statement.value, ast.Call
    ):
        return statement.value
    return None


def is_guardable(source: SourceText, statement: ast.stmt | None, call: ast.Call) -> bool:
    """The guard fix wraps a whole statement line that only calls or assigns the clip `call`
    (`statement`: the statement around it)."""
    if statement is None or clip_call_of(statement) is not call:
        return False
    if not source.alone_on_line(statement):
        return False
    if isinstance(statement, ast.Assign) and not all(
        isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) for target in statement.targets
    ):
        return False
    return has_guard_optimizer(call)


def has_guard_optimizer(call: ast.Call) -> bool:
    """The guard fix needs the optimizer as a name, attribute or subscript it can repeat."""
    receiver = call.func.value  # type: ignore[attr-defined]
    index = 0 if isinstance(receiver, ast.Name) and receiver.id == "self" else 1
    optimizer = positional_or_keyword(call, index, "optimizer")
    return isinstance(optimizer, (ast.Name, ast.Attribute, ast.Subscript))
