"""The encoding cookie is read from a module's first two lines, taken from a head of the text
(`sources.text.first_two_lines`): the same lines as splitting the whole text, so the same
encoding, the same decoded text and the same refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.sources import text
from amp_clipfix.sources.text import HEAD, SourceError, decode_source, first_two_lines

PIECES = [b"a", b"\r", b"\n", b"\r\n", b"# coding: latin-1", b"\xe9", b" ", b"x = 1"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16), st.integers(min_value=1, max_value=12))
def test_the_first_two_lines_are_the_whole_texts_whatever_the_head(
    pieces: list[bytes], head: int
) -> None:
    """A small head cuts texts everywhere: inside a line, between `\\r` and `\\n`, after the
    first line, before the second ends."""
    data = b"".join(pieces)
    original = text.HEAD
    text.HEAD = head
    try:
        assert first_two_lines(data) == data.splitlines(keepends=True)[:2]
    finally:
        text.HEAD = original


def reference(data: bytes, bom: bool) -> str:
    """The cookie as the first spelling read it: the whole text split, tokenize asked."""
    import codecs
    import tokenize

    first_lines = data.splitlines(keepends=True)[:2]
    try:
        detected, _ = tokenize.detect_encoding(iter(first_lines).__next__)
    except SyntaxError as error:
        if not str(error.msg).startswith("invalid or missing encoding declaration"):
            raise SourceError(f"bad encoding declaration: {error.msg}") from None
        detected = text._cookie_in_raw_lines(first_lines, bom)
    if detected == "utf-8-sig":
        return "utf-8"
    return codecs.lookup(detected).name


def declared(function: object, data: bytes) -> str:
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return function(data, bom)  # type: ignore[operator, no-any-return]
    except SourceError as error:
        return f"refused: {error}"


def outcome(data: bytes) -> tuple[str, str] | str:
    try:
        source = decode_source(Path("m.py"), data)
    except SourceError as error:
        return str(error)
    return source.encoding, source.text


COOKIES = [
    b"# coding: latin-1",
    b"# -*- coding: utf-8 -*-",
    b"# vim: set fileencoding=cp1252 :",
    b"# coding: nonesuch",
    b"#coding=utf-16",
    b"# coding",
    b"coding: latin-1",
]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from([*PIECES, *COOKIES, b"\xef\xbb\xbf", b"\xff", b"#", b"\x0c"]),
        max_size=10,
    )
)
def test_the_encoding_is_the_first_spellings(pieces: list[bytes]) -> None:
    """Cookies on the first, second or third line, after a blank or a code line, unknown
    encodings, a BOM before a cookie, bytes that are not UTF-8: the same codec or refusal."""
    data = b"".join(pieces)
    assert declared(text._declared_encoding, data) == declared(reference, data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"x = 1",
        b"x = 1\n",
        b"\xff\xfe = 1\n",  # not UTF-8, no cookie
        b"\xef\xbb\xbfx = 1\n",  # a BOM
        b"\xef\xbb\xbf# coding: latin-1\n",  # a BOM and another cookie: refused
        b"#" + b"a" * (HEAD - 2) + b"\r\n# coding: latin-1\n\xe9\n",  # `\r\n` across the head
        b"#" + b"a" * (HEAD + 10) + b"\n# coding: latin-1\n\xe9 = 1\n",  # a longer first line
        b"a" * (HEAD + 10) + b"\n# coding: latin-1\n\xe9 = 1\n",  # not a comment: no cookie
        b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nname = '\xe9'\n" + b"x\n" * HEAD,
        b"# coding: latin-1\r" + b"y = '\xe9'\r" * HEAD,  # old-Mac line ends
        b"a = 1\nb = 2\n# coding: latin-1\nc = '\xe9'\n" + b"d = 3\n" * HEAD,  # a third line's
        b"# coding: utf-16\n" + b"x = 1\n" * HEAD,  # refused: it does not round-trip
    ],
)
def test_decoding_gives_what_the_whole_text_gave(data: bytes) -> None:
    """The encoding, text or refusal of the first spelling."""
    assert first_two_lines(data) == data.splitlines(keepends=True)[:2]
    assert declared(text._declared_encoding, data) == declared(reference, data)
    found = outcome(data)
    if b"coding: latin-1" in data[:HEAD] and data[:1] == b"#":
        assert found[0] == "iso8859-1", found  # the cookie was read
