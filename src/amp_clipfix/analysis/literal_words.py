"""Whether a module's text writes a name only where it gives no attribute a value: in comments,
in string literals that no call reads as a name (a docstring, `x = "..."`, `"a" + x`, a
`help=` text), and in code where it is imported under its own name or called (`name(...)`,
accelerate's `PartialState()` in 27 files), told by a lexer of comments and string literals
(one regular expression, in C) instead of a parse.

reach.py's `value_files` asks which files give an attribute name a value, and parsed every file
that writes the name other than as `.name(`: a common method name (`eval`, `parameters`, `get`)
is written in the comments and docstrings of tens of files (open_clip's `eval`: 23 files parsed,
none binding it). bound_names.file_names gives a value by code (a definition, a target, a
keyword, an import, a `global`) or by the words of a string that is a call's argument (or an
element of a list, tuple or set that is one), which stands inside the call's brackets between
`(`, `,`, `=` and `,`, `)`; the prose of a `help` / `description` / `epilog` keyword it leaves.

Python's tokenizer pairs quotes the same way in every string literal (a backslash escapes the
next character, raw or not), and up to 3.11 a formatted string is lexed as one too. From 3.12
(PEP 701) a formatted string's field may hold strings with its own quotes, so there a text with
a field is left to the parse. A text that does not parse binds nothing for reach.py (its names
are empty), whatever the lexer reads in it.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
from collections.abc import Iterator

from amp_clipfix.analysis.text_tests import free_word
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.text import first_two_lines

# PEP 701: a formatted string's field is lexed as code (its quotes, comments, brackets).
FIELDS_LEXED = sys.version_info >= (3, 12)
# A comment or a string literal (its prefix letters stand before it), as the tokenizer pairs it.
LITERAL = lazy(
    rb"#[^\r\n]*"
    rb"|'''(?:[^\\']|\\.|'(?!''))*'''"
    rb'|"""(?:[^\\"]|\\.|"(?!""))*"""'
    rb"|'(?:[^\\'\r\n]|\\(?:\r\n|.))*'"
    rb'|"(?:[^\\"\r\n]|\\(?:\r\n|.))*"',
    re.DOTALL,
)
COMMENT, PLAIN, FORMATTED = 0, 1, 2
ESCAPE = lazy(rb"\\[xuUN0-7\r\n]")  # an escape that makes a letter, a line continuation
HASH = ord("#")
NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
FORMATTING = frozenset(b"fFtT")  # f-strings, and 3.14's template strings
TRIPLE_QUOTES = (b"'''", b'"""')
GAP_BYTES = b" \t\f\r\n\\"  # between tokens: spaces, line breaks, line continuations
OPENERS = (b"(", b"[", b"{", b",")
CLOSERS = (b",", b")", b"]", b"}")
OPERATOR_BYTES = frozenset(b"=<>!:+-*/%&|^@")  # before `=`: a comparison, not a keyword
CALLED_BYTES = NAME_BYTES | frozenset(b")]'\"")  # before a call's `(`: what it calls
# Keywords after which an expression goes on: a call of a name there reads it.
EXPRESSION_KEYWORDS = frozenset(
    {b"return", b"await", b"not", b"in", b"and", b"or", b"yield", b"else", b"if", b"elif"}
    | {b"is", b"assert", b"raise", b"while", b"with"}
)
# a keyword whose string with a space is prose, not a name (bound_names.DOC_KEYWORDS)
PROSE_KEYWORDS = frozenset({b"help", b"description", b"epilog"})


class Literals:
    """A text's comments and string literals in order (where each starts and ends), and, when
    first asked, its implicit concatenations (string literals with only gaps and comments
    between: one value, whose words join)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts: list[int] = []
        self.ends: list[int] = []
        # lexed as far as asked (`at`): a writing in code ends the question early
        self.lexing: Iterator[re.Match[bytes]] | None = LITERAL.finditer(data)
        self.lexed = 0  # the text is lexed up to here
        self._groups: dict[int, tuple[int, int]] | None = None

    @property
    def readable(self) -> bool:
        """False: a 3.12 field, lexed otherwise (the module's docstring)."""
        if not FIELDS_LEXED:
            return True
        self.lex(len(self.data))
        return not any(
            self.kind(index) == FORMATTED and has_field(self.data[start : self.ends[index]])
            for index, start in enumerate(self.starts)
        )

    def lex(self, position: int) -> None:
        """Lex the text past `position` (to its end where no literal holds it)."""
        while self.lexed <= position and self.lexing is not None:
            literal = next(self.lexing, None)
            if literal is None:
                self.lexing, self.lexed = None, len(self.data) + 1
            else:
                self.starts.append(literal.start())
                self.ends.append(literal.end())
                self.lexed = literal.end()

    def at(self, position: int) -> int:
        """The literal that holds `position`, -1 where it is code."""
        self.lex(position)
        index = bisect.bisect_right(self.starts, position) - 1
        return index if index >= 0 and position < self.ends[index] else -1

    def kind(self, index: int) -> int:
        start = self.starts[index]
        if self.data[start] == HASH:
            return COMMENT
        return FORMATTED if formatted_prefix(self.data, start) else PLAIN

    def opening(self, index: int) -> int:
        """Where the literal's token starts: its prefix letters (`rb"..."`), its quote."""
        opening = self.starts[index]
        while opening > 0 and self.data[opening - 1] in NAME_BYTES:
            opening -= 1
        return opening

    def text(self, index: int) -> bytes:
        """A string literal's text between its quotes (nothing for a comment)."""
        start, end = self.starts[index], self.ends[index]
        if self.data[start] == HASH:
            return b""
        quotes = 3 if self.data[start : start + 3] in TRIPLE_QUOTES and end - start >= 6 else 1
        return self.data[start + quotes : end - quotes]

    def groups(self) -> dict[int, tuple[int, int]]:
        """Each literal of a run of two or more with only gaps between -> the run's first and
        last literal."""
        if self._groups is None:
            self.lex(len(self.data))
            runs: dict[int, tuple[int, int]] = {}
            data, starts, ends = self.data, self.starts, self.ends
            first = 0
            for index in range(1, len(starts)):
                if data[ends[index - 1] : self.opening(index)].translate(None, GAP_BYTES):
                    first = index
                else:
                    runs[first] = (first, index)
            self._groups = {
                index: (first, last)
                for first, last in runs.values()
                for index in range(first, last + 1)
            }
        return self._groups


@functools.lru_cache(maxsize=64)
def literals_of(data: bytes) -> Literals:
    """Once per text: several names are asked of one file (a question each)."""
    return Literals(data)


def written_binding_nothing(name: str, data: bytes) -> bool:
    """Every writing of `name` other than `.name(` (text_tests.free_word) is in a comment or
    a string literal, or in code where it binds no value (`imported_otherwise`,
    `called_there`), and no string that may be a call's argument spells it
    (`strings_name`). False where the lexer cannot tell (the module's docstring). Meant for a
    text Python reads as it is written: UTF-8 or ASCII, NFKC-stable (reach.py checks)."""
    free = [match.start() for match in free_word(name).finditer(data)]
    if not free:
        return True
    literals = literals_of(data)
    for position in free:
        if literals.at(position) < 0 and not (
            imported_otherwise(name, data, literals, position) or called_there(name, data, position)
        ):
            return False  # written in code where it may bind a value
    return literals.readable and not strings_name(name, data, literals)


# An import statement on one line (no brackets, continuation, `;` or comment): what a module
# binds for it is read from its text (bound_names.stored_names).
IMPORT_LINE = lazy(
    rb"[ \t]*(?:from[ \t]+([.\w]+)[ \t]+)?import[ \t]+([\w. \t,]+)[ \t]*(?:\r?\n|\Z)"
)
IMPORTED = lazy(rb"([\w.]+)(?:[ \t]+as[ \t]+(\w+))?")


def imported_otherwise(name: str, data: bytes, literals: Literals, position: int) -> bool:
    """The name written at `position` stands in a one-line import that binds other names
    with it: a module path (`from name.a import b`, `import a.name`, `import name as n`), an
    imported name (`from a import name`: under its own name, no value; `... as n`). Not an
    `as name`, nor the first name of `import name.a` (it binds `name`)."""
    line = data.rfind(b"\n", 0, position) + 1
    statement = IMPORT_LINE.match(data, line)
    if statement is None or position >= statement.end() or literals.at(line) >= 0:
        return False
    if statement.start(1) <= position < statement.end(1):
        return True  # the module of `from module import ...`
    for item in IMPORTED.finditer(data, statement.start(2), statement.end(2)):
        if item.start() <= position < item.end():
            if item.group(2) is not None and item.start(2) <= position:
                return False  # `as name`
            from_import = statement.start(1) >= 0
            return from_import or item.group(2) is not None or position != item.start()
    return False


def called_there(name: str, data: bytes, position: int) -> bool:
    """The name written in code at `position` binds no value there: it is called right there
    (`name(`: read) where an expression starts or goes on: a line's start, after an operator,
    a bracket or a keyword an expression follows (`return`, `not`, `in`...). Never after
    `def` or `class` (a definition), `.`, a line continuation (it may follow `def`), nor with
    anything between it and its `(`."""
    end = position + len(name)
    if data[end : end + 1] != b"(":
        return False
    before = position
    while before > 0 and data[before - 1] in b" \t\f":
        before -= 1
    if before == 0:
        return True  # the text's first statement
    mark = data[before - 1 : before]
    if mark in (b"\r", b"\n"):  # the line starts with it: a statement or an argument
        line_break = (
            before - 2 if before >= 2 and data[before - 2 : before] == b"\r\n" else before - 1
        )
        return line_break == 0 or data[line_break - 1 : line_break] != b"\\"
    keyword_start = before
    while keyword_start > 0 and data[keyword_start - 1] in NAME_BYTES:
        keyword_start -= 1
    if keyword_start < before:
        return data[keyword_start:before] in EXPRESSION_KEYWORDS
    return mark not in (b".", b"\\")


def calls_may_name(name: str, data: bytes) -> bool:
    """A call in the text may give `name` a value as file_names reads calls: a keyword
    `name=` (the name in code before `=`, gaps and comments between) or a string argument
    that spells it (`strings_name`). Yes where the lexer cannot tell. For the text Python
    parsed (UTF-8), NFKC-stable (bound_names checks)."""
    literals = literals_of(data)
    if not literals.readable:
        return True
    for match in free_word(name).finditer(data):
        if literals.at(match.start()) < 0 and before_equals(data, literals, match.end()):
            return True
    return strings_name(name, data, literals)


def before_equals(data: bytes, literals: Literals, position: int) -> bool:
    """The code from `position` on is `=` (not `==`), past gaps and comments."""
    while True:
        position = skip_gap(data, position, 1)
        index = literals.at(position)
        if index < 0 or literals.kind(index) != COMMENT:
            break
        position = literals.ends[index]
    return data[position : position + 1] == b"=" and data[position + 1 : position + 2] != b"="


def strings_name(name: str, data: bytes, literals: Literals) -> bool:
    """A string that may be a call's argument or an element of one (`argument_shaped`), or
    any formatted string (its fields are code), spells `name` as a word, whatever stands
    around it: file_names reads the words of a string argument (`"x.name()"`, an argparse
    `"--name"`, a dashed `"--a-b"` for `a_b`, an escape that makes a letter, words an
    implicit concatenation joins)."""
    word, escape = spellings(name)
    for pattern in (word, escape):
        for match in pattern.finditer(data):
            index = literals.at(match.start())
            kind = literals.kind(index) if index >= 0 else COMMENT  # in code: not a string
            if kind == FORMATTED and in_field(data, literals, index, match.start()):
                return True
            if kind == PLAIN and argument_shaped(data, literals, index):
                return True
    groups = literals.groups()
    for first, last in set(groups.values()):
        words = b"".join(literals.text(index) for index in range(first, last + 1))
        if word.search(words) and argument_shaped(data, literals, first):
            return True
    return False


def in_field(data: bytes, literals: Literals, index: int, position: int) -> bool:
    """`position` of a formatted string literal may be in one of its fields (code): not before
    its first `{`, nor after its last `}` (a field ends with one). Outside its fields, its text
    is no string value (a formatted string is not one)."""
    start, end = literals.starts[index], literals.ends[index]
    return data.find(b"{", start, position) != -1 and data.find(b"}", position, end) != -1


def argument_shaped(data: bytes, literals: Literals, index: int) -> bool:
    """The string literal `index`, with the literals it is concatenated with, may be a call's
    argument or an element of a display that is one, as file_names reads them: a value
    standing alone between `(`, `[`, `{`, `,` or a keyword's `=` and `,`, `)`, `]` or `}`
    (outside brackets too: `x = "a", b` counts, which only asks the parse). Not the prose of
    a `help` / `description` / `epilog` keyword (a string with a space); not an operand (`"a"
    + x`, `"{}".format(x)`, `x == "a"`, a dict's key or value, a docstring); not one joined
    with a formatted string (no string value: its fields' own strings are asked of
    themselves)."""
    first, last = literals.groups().get(index, (index, index))
    if any(literals.kind(k) == FORMATTED for k in range(first, last + 1)):
        return False
    after = skip_gap(data, literals.ends[last], 1)
    before = skip_gap(data, literals.opening(first) - 1, -1)
    while data[before : before + 1] == b"(" and data[after : after + 1] == b")":
        if before > 0 and data[skip_gap(data, before - 1, -1)] in CALLED_BYTES:
            break  # a call's brackets: the value is its argument
        before = skip_gap(data, before - 1, -1)  # brackets around the value only: `(\n"a" "b")`
        after = skip_gap(data, after + 1, 1)
    if data[after : after + 1] not in CLOSERS:
        return False
    mark = data[before : before + 1] if before >= 0 else b""
    if mark in OPENERS:
        return True
    if mark != b"=" or before < 1 or data[before - 1] in OPERATOR_BYTES:
        return False  # an operand (`x == "a"`, `"a" + x`, `lambda: "a"`, a dict's value)
    keyword_end = skip_gap(data, before - 1, -1) + 1
    keyword_start = keyword_end
    while keyword_start > 0 and data[keyword_start - 1] in NAME_BYTES:
        keyword_start -= 1
    texts = [literals.text(k) for k in range(first, last + 1)]
    prose = any(b" " in text for text in texts) and not any(b"\\N{" in text for text in texts)
    return not (prose and data[keyword_start:keyword_end] in PROSE_KEYWORDS)


def skip_gap(data: bytes, position: int, step: int) -> int:
    """The first position from `position` on (going by `step`) that is not a gap byte."""
    while 0 <= position < len(data) and data[position] in GAP_BYTES:
        position += step
    return position


@functools.lru_cache(maxsize=256)
def spellings(name: str) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Where a string's value may hold `name` as one of its words (after no letter or `_`,
    before no letter, digit or `_`: `1name` and `\\nname` hold it, `rename` does not; dashed
    where it has `_`: `--a-b` is read `a_b`), and where an escape may make a letter or join
    lines (two searches: each starts with a literal, which `re` skips to)."""
    word = re.escape(name.encode("ascii"))
    spelled = word.replace(b"_", b"[-_]") if b"_" in word else word
    after_escape = rb"(?<=\\[A-Za-z]" + spelled + rb")"  # `\nname`: the `n` is no letter of it
    start = rb"(?:(?<![A-Za-z_]" + spelled + rb")|" + after_escape + rb")"
    return re.compile(spelled + start + rb"(?![A-Za-z0-9_])"), ESCAPE


def formatted_prefix(data: bytes, start: int) -> bool:
    """The literal starting at `start` has a formatting prefix (any letters run before its
    quote that holds `f` or `t`: `if"x"` counts too, which only asks the parse)."""
    before = start
    while before > 0 and data[before - 1] in NAME_BYTES:
        before -= 1
        if data[before] in FORMATTING:
            return True
    return False


def has_field(literal: bytes) -> bool:
    """A formatted literal's text holds a field's `{` (not a doubled `{{`)."""
    return b"{" in literal.replace(b"{{", b"")


def read_as_written(data: bytes) -> bool:
    """The bytes are what Python lexes: ASCII, or a text with no encoding declaration (UTF-8,
    whose multibyte characters hold no ASCII byte; a declared codec may: Shift JIS's `\\`)."""
    return data.isascii() or not any(b"coding" in line for line in first_two_lines(data))
