"""Make text taken from files and file names safe to print on a terminal.

A file name or a line of code may hold escape sequences (`ESC ]0;...` retitles the window, `ESC [2J`
clears it), bytes that are not valid UTF-8, or bidirectional overrides that make code read
differently from what it is. None of them reaches the terminal raw: each is shown as a visible
escape (`\\x1b`, `\\udcff`, `\\u202e`), so what a person reads is what the file holds.
"""

from __future__ import annotations

import re

__all__ = ["json_safe", "terminal_safe"]

# C0 controls but tab, DEL, C1 controls (0x9b is a one-byte CSI), lone surrogates (bytes of a
# file name that are not UTF-8), and the bidirectional embeddings, overrides and isolates. Both
# patterns are compiled by `re` when first used and cached there (~0.3 ms each for their ranges):
# a run that prints no JSON never compiles the second.
_UNSAFE = "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` with every character that could steer a terminal replaced by a visible escape."""
    return re.sub(_UNSAFE, _escape, text)


# What JSON may hold raw but a terminal must not get: DEL, C1 controls, lone surrogates, the
# bidirectional controls and the line/paragraph separators (json.dumps escapes C0 already).
_JSON_UNSAFE = "[\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def json_safe(document: str) -> str:
    """A JSON text with those characters as `\\uXXXX` escapes: the same JSON value, safe to
    print on a terminal (and to encode: a lone surrogate from a file name is no longer raw).
    An ASCII text without DEL has none, as most reports are: told without the pattern."""
    if document.isascii() and "\x7f" not in document:
        return document
    return re.sub(_JSON_UNSAFE, lambda match: f"\\u{ord(match.group()):04x}", document)
