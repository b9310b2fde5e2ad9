"""A summary's lines (analysis/text_lines.py `TextLines`) are `bytes.splitlines()`'s, with where
each starts and where its text ends before its line break: made from the lines' lengths alone
where every break is `\\n` (no `\\r` in the text), from each line with its break otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.text_lines import TextLines


def expected(data: bytes) -> tuple[list[int], list[int]]:
    starts, ends, at = [], [], 0
    for line in data.splitlines(keepends=True):
        starts.append(at)
        ends.append(at + len(line.rstrip(b"\r\n")))
        at += len(line)
    return starts, ends


def check(data: bytes) -> None:
    lines = TextLines(data)
    assert (list(lines.starts), list(lines.ends)) == expected(data)
    assert list(lines) == data.splitlines()
    assert len(lines) == len(data.splitlines())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"\n\n",
        b"a",
        b"a\nb",
        b"a\nb\n",
        b"  x = 1\n\n    y = 2\n",
        b"a\r\nb\r\n",
        b"a\rb\r",
        b"a\r\n\rb\n\r\n",
        b"a\x0bb\x0cc\x1cd\x85e\n",  # str.splitlines' breaks, not bytes'
        "é\nü\n".encode(),
    ],
)
def test_lines_as_splitlines_gives_them(data: bytes) -> None:
    check(data)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b" ", b"\n", b"\r", b"\r\n", b"\x0b", b"\x85"])))
def test_random_texts(pieces: list[bytes]) -> None:
    check(b"".join(pieces))
