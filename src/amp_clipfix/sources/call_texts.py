"""Whether a text calls a name, or an alias of it, read as text before the file is parsed (the
prefilter's call tests: prefilter.may_have_fused_optimizer, may_configure_trainer).

Each pattern starts with the names it looks for, so `re` skips to where one is written, as a
plain text search does: a pattern that starts with `\\b` or `\\w+` is tried at every byte of the
module (`IMPORT_ALIAS` over a module holding `Trainer`: ~25 ns a byte, a millisecond per test
module of the Lightning repository). The answers are those of the patterns as first written
(`\\b(\\w+)\\s+as\\s+(\\w+)` over the whole text, `\\b(?:names)\\s*\\(`): tests/test_call_texts.py.
"""

from __future__ import annotations

import functools
import re

from amp_clipfix.patterns import lazy

# `X as Y` (an import alias, or a `with` / `except` target: a look-alike only costs a parse).
IMPORT_ALIAS = lazy(rb"\b(\w+)\s+as\s+(\w+)")
# `make = L.Trainer` / `trainer_cls: type = pl.Trainer` (also a class attribute): a line that
# binds a name to a dotted name, which is then called by the name.
ASSIGNED_ALIAS = lazy(
    rb"[ \t]*(?:self\.)?(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:[\w.]+\.)?(\w+)[ \t\r]*(?:#[^\n]*)?"
)


def calls_any(data: bytes, wanted: frozenset[str], with_arguments: bool = False) -> bool:
    """Whether the text calls one of `wanted` or an alias of one: imported (`X as Y` ... `Y(`)
    or bound to it (`Y = m.X` ... `Y(`, `self.Y(`); `with_arguments`: with an argument.

    Read as text, not parsed: the reader parses each file that passes once, so parsing here
    too would double the cost of every file that matters; a look-alike only costs a parse."""
    names = set(wanted) | import_aliases(data, wanted) | assigned_aliases(data, wanted)
    return call_of(tuple(sorted(names)), with_arguments).search(data) is not None


def import_aliases(data: bytes, wanted: frozenset[str]) -> set[str]:
    """The `Y` of each `X as Y` that IMPORT_ALIAS finds in the text with `X` one of `wanted`.
    Such a match writes `X` followed by `\\s+as\\s`: a text where no name of `wanted` is (most
    of them, and found by a search that starts with the name) has none, and is not matched
    word by word."""
    if not any(alias_after(name).search(data) for name in sorted(wanted)):
        return set()
    return {
        match.group(2).decode("ascii", "replace")
        for match in IMPORT_ALIAS.finditer(data)
        if match.group(1).decode("ascii", "replace") in wanted
    }


@functools.lru_cache(maxsize=64)
def alias_after(name: str) -> re.Pattern[bytes]:
    """`name` followed by what IMPORT_ALIAS needs after its first name."""
    return re.compile(re.escape(name.encode("ascii")) + rb"\s+as\s")


@functools.lru_cache(maxsize=256)
def call_of(names: tuple[str, ...], with_arguments: bool) -> re.Pattern[bytes]:
    """`\\b(?:names)\\s*\\(` (then an argument, `with_arguments`) with each name first: the
    look-behind after a name refuses a word byte before it, what `\\b` before it refuses (each
    name is a run of word bytes: `wanted`'s identifiers, aliases matched by `\\w+`)."""
    alternatives = b"|".join(
        re.escape(name.encode("ascii"))
        + rb"(?<![A-Za-z0-9_]"
        + re.escape(name.encode("ascii"))
        + rb")"
        for name in names
    )
    arguments = rb"\s*[^)\s]" if with_arguments else b""
    return re.compile(rb"(?:" + alternatives + rb")\s*\(" + arguments)


def assigned_aliases(data: bytes, wanted: frozenset[str]) -> set[str]:
    """The names lines bind to one of `wanted` (ASSIGNED_ALIAS), looking only at the lines
    that hold one (a 5 MB module is not matched line by line)."""
    found: set[str] = set()
    for word in sorted(wanted):
        encoded = word.encode("ascii")
        start = data.find(encoded)
        while start != -1:
            line = data.rfind(b"\n", 0, start) + 1
            end = data.find(b"\n", start)
            end = len(data) if end == -1 else end
            match = ASSIGNED_ALIAS.fullmatch(data, line, end)
            if match is not None and match.group(2) == encoded:
                found.add(match.group(1).decode("ascii", "replace"))
            start = data.find(encoded, end)
    return found
