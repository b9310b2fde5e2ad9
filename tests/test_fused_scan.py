"""The scan for where a fused origin may be written (fused_origins.MAY_WRITE_FUSED) says what the
alternatives written from their first byte say, on any text: it only starts each search at the
word `fused` and looks back from it (45 times faster on the corpora's files that hold it)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.fused_origins import MAY_WRITE_FUSED

# The pattern as first written: each alternative from its first byte.
FROM_FIRST_BYTE = re.compile(
    rb"(?<![A-Za-z0-9_])fused\s*(?:[:,]|[-+*/|&^%@]?=(?!=))|[\"']fused[\"']|\.fused(?![A-Za-z0-9_])"
)

CASES = [
    b"fused=True",
    b"opt(fused = flag)",
    b"fused: bool = False",
    b"x, fused, y = t",
    b"fused += 1",
    b"fused == True",
    b"unfused=1",
    b"fused_adam=1",
    b"self.fused",
    b"self.fused_kernel",
    b"'fused'",
    b'd["fused"] = 1',
    b"'fused ",
    b"kwargs.get('fused')",
    b"is_fused",
    b"fusedfused=1",
    b".fusedfused",
    b"_fused(",
    b"fused",
    b"",
]


def test_the_cases_are_the_same() -> None:
    for text in CASES:
        expected = FROM_FIRST_BYTE.search(text) is not None
        assert (MAY_WRITE_FUSED.search(text) is not None) is expected, text


PIECES = st.sampled_from(
    [
        b"fused",
        b"fuse",
        b"d",
        b"_",
        b"a",
        b"9",
        b".",
        b"'",
        b'"',
        b" ",
        b"\n",
        b"\t",
        b"=",
        b"==",
        b":",
        b",",
        b"+",
        b"-=",
        b"|",
        b"(",
        b")",
        b"\xc3\xa9",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=12))
def test_any_text_is_the_same(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    assert (MAY_WRITE_FUSED.search(text) is None) == (FROM_FIRST_BYTE.search(text) is None)


def test_the_search_starts_at_the_word() -> None:
    """What makes it fast: a pattern that starts with a literal is searched for that literal
    first (re's prefix scan), so only the places of `fused` are tried."""
    assert MAY_WRITE_FUSED.pattern.startswith(b"fused(")
