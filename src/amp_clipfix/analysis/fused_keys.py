"""Whether a dict the evaluator builds can hold the key `fused`, told from the project's texts
once per run: where none can, a call's `**spread` is not evaluated to look for one.

A call the evaluator cannot follow builds a (possibly fused) optimizer when it passes `fused`
(library.py `fused_of`), also through a `**spread`: every spread was evaluated to look, and
evaluating one can follow a parameter to every caller of its function (allennlp's
`subclass(**params)` in `FromParams.from_params`: a third of its run). A dict value's keys
(values.DictV) are written by the code: a string constant (a display's key, `d["k"] = v`,
`d.setdefault("k", v)`, a comprehension's literal key), or an identifier (a call's keyword, a
record's field, a namespace's attribute, a `**kwargs` parameter's keyword). An identifier
`fused` is the word `fused` in the text (as Python reads names, NFKC-folded: `python_text`). A
string constant equal to `"fused"` is either written so (the word again) or made by its
literal's escapes or by pieces joined: an escape that makes one of its letters (`\\x66`,
`\\146`, `\\u0066`, `\\U00000066`, `\\N{...}`: `LETTER_ESCAPE`), or a piece whose first letters
`f`, `fu`, `fus` or `fuse` end at a quote or a backslash (an implicit concatenation `"fu"
"sed"`, a line continuation inside the literal: `SPLIT`, the piece opened by a quote).

A file passes (`may_write_fused_key`) where one of those is found, unless the file is Python
read as written (`.py`, UTF-8 or ASCII: the lexer pairs its quotes as the tokenizer does) and
each finding is in a comment; in a string literal whose value (with the literals joined to
it) is not `"fused"` (nor `"--fused"`, an option naming it); in a formatted string's text
outside its fields; or, the word in code, a name no key is made of (`x = fused`, a statement
`fused = x`; not `f(fused=x)`, `fused: bool`, `a, fused =`, `x.fused =`). Any file passing
keeps every spread evaluated: the run asks `exists` of the test once, noted as any `exists`
is (an edit that makes a file pass asks again).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping
from pathlib import Path

from amp_clipfix.analysis.literal_words import (
    COMMENT,
    FORMATTED,
    PLAIN,
    TRIPLE_QUOTES,
    Literals,
    literals_of,
    read_as_written,
    skip_gap,
)
from amp_clipfix.analysis.recording import PREDICATES, Recording, exists
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import python_text

KEY = "fused"
PREDICATE = "may_write_fused_key"  # recording.PREDICATES
TEST = (("raw", PREDICATE),)
WORD = lazy(rb"fused(?<![A-Za-z0-9_]fused)(?![A-Za-z0-9_])")  # the literal first: `re` skips to it
# An escape that makes a letter of `fused` (f 0x66 / 0o146, u 0x75 / 0o165, s 0x73 / 0o163,
# e 0x65 / 0o145, d 0x64 / 0o144), or any named one.
LETTER_ESCAPE = lazy(
    rb"\\(?:x(?:6[456]|7[35])|u00(?:6[456]|7[35])|U000000(?:6[456]|7[35])|N\{|1(?:4[456]|6[35]))"
)
# The first letters of `fused` ending at a quote or a backslash, after a quote or a line break:
# the piece of a split literal that starts the value (the `f` first: `re` skips to it).
SPLIT = lazy(rb"f(?<=[\"'\n]f)(?:u(?:se?)?)?[\"'\\]")
OPEN, CLOSE = ord("{"), ord("}")
BRACES = (OPEN, CLOSE)
QUOTES = (ord("'"), ord('"'))


def may_write_fused_key(path: Path | None, stored: bytes) -> bool:
    """The text may write a `fused` key (the module's docstring); `stored`: its bytes."""
    if b"fused" not in stored and not LETTER_ESCAPE.search(stored) and not SPLIT.search(stored):
        return python_text(stored) is not stored and b"fused" in python_text(stored)
    data = python_text(stored)  # its names as Python reads them
    if data is not stored and count(data) != count(stored):
        return True  # a name NFKC folds to `fused`
    words = [m.start() for m in WORD.finditer(stored)]
    made = [m.start() for m in LETTER_ESCAPE.finditer(stored)]
    made += [m.start() for m in SPLIT.finditer(stored)]
    if not words and not made:
        return False
    if path is None or path.suffix != ".py" or not read_as_written(stored):
        return True  # a notebook's JSON, a text the lexer may pair otherwise than Python
    literals = literals_of(stored)
    if not literals.readable:
        return True  # 3.12's fields, lexed as code
    code = set(words)
    for position in [*words, *made]:
        index = literals.at(position)
        if index < 0:
            if position in code and names_a_key(stored, literals, position):
                return True  # a keyword `fused=`, a field `fused: bool`
            continue  # another name; an escape or a piece's letters in code (`f"..."`)
        kind = literals.kind(index)
        if kind == FORMATTED:
            if in_field(stored, literals.starts[index], position):
                return True  # a field's code
            continue  # a formatted string's text: no constant
        if kind == PLAIN and key_of(joined_value(literals, index)) in (KEY, None):
            return True
    return False


def in_field(data: bytes, start: int, position: int) -> bool:
    """`position` of the formatted literal starting at `start` (its quote) is in a field: a
    `{` not doubled opened it (a doubled `{{` / `}}` in the text is a brace), a field's own
    strings skipped whole (up to 3.11 a field holds no string of the outer quote)."""
    quotes = 3 if data[start : start + 3] in TRIPLE_QUOTES else 1
    at, depth = start + quotes, 0
    while at < position:
        byte = data[at]
        if depth == 0:
            if byte in BRACES and data[at + 1 : at + 2] == data[at : at + 1]:
                at += 2
                continue
            depth += byte == OPEN
        elif byte in QUOTES:
            end = data.find(data[at : at + 1], at + 1)
            if end < 0 or end >= position:
                return True  # in a field's own string
            at = end
        else:
            depth += (byte == OPEN) - (byte == CLOSE)
        at += 1
    return depth > 0


def names_a_key(data: bytes, literals: Literals, start: int) -> bool:
    """The name at `start` (in code) may name a key: a field (`fused: bool`, `fused := x`), a
    keyword or a store other than a statement's own plain name (`f(fused=x)`, `a, fused =`,
    `x.fused =`). Not a plain name read (`x = fused`), nor a statement `fused = x`: the
    byte before it, past gaps and comments, is none of `(`, `,`, `.`."""
    after = past_comments(data, literals, start + len(KEY), 1)
    mark = data[after : after + 1]
    if mark == b":":
        return True
    if mark != b"=" or data[after + 1 : after + 2] == b"=":
        return False
    before = past_comments(data, literals, start - 1, -1)
    return before >= 0 and data[before : before + 1] in (b"(", b",", b".")


def past_comments(data: bytes, literals: Literals, position: int, step: int) -> int:
    """The first position from `position` on (by `step`) that is no gap and in no comment."""
    while True:
        position = skip_gap(data, position, step)
        index = literals.at(position) if 0 <= position < len(data) else -1
        if index < 0 or literals.kind(index) != COMMENT:
            return position
        position = literals.ends[index] if step > 0 else literals.starts[index] - 1


def key_of(value: object) -> object:
    """A string as the key it may name (an argparse option `--fused` names `fused`)."""
    return value.lstrip("-") if isinstance(value, str) else value


def count(data: bytes) -> int:
    return sum(1 for _ in WORD.finditer(data))


def joined_value(literals: Literals, index: int) -> object:
    """The value of the string literal `index` with the literals it is concatenated with
    (None where it is no constant: a formatted piece, a literal Python would not read)."""
    first, last = literals.groups().get(index, (index, index))
    pieces: list[object] = []
    for each in range(first, last + 1):
        kind = literals.kind(each)
        if kind == COMMENT:
            continue  # between the pieces
        if kind == FORMATTED:
            return None
        source = literals.data[literals.opening(each) : literals.ends[each]]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an invalid escape: read as Python reads it
                pieces.append(ast.literal_eval(source.decode("utf-8")))
        except (ValueError, SyntaxError, UnicodeDecodeError):
            return None
    if all(isinstance(piece, str) for piece in pieces):
        return "".join(pieces)  # type: ignore[arg-type]
    return b"" if all(isinstance(piece, bytes) for piece in pieces) else None


def may_hold_fused(contents: Mapping[Path, bytes]) -> bool:
    """Some text of the project may write a `fused` key: an `exists` test, noted."""
    return exists(contents, *TEST)


def noted_again(contents: Mapping[Path, bytes]) -> None:
    """The run's answer noted for the query asking now, as `may_hold_fused` noted it."""
    if isinstance(contents, Recording) and TEST not in contents.reads.exists:
        exists(contents, *TEST)


PREDICATES[PREDICATE] = may_write_fused_key
