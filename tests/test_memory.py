"""A summary keeps its module's lines compactly (summary.TextLines); they must read exactly as
`bytes.splitlines()` does, since columns and pruned statements are read from them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from amp_clipfix.analysis.summary import TextLines, summarise

TEXTS = [
    b"",
    b"x",
    b"x\n",
    b"a\r\nb\rc\n\nd",
    b"\r\r\n\n\rx",
    "é = 1\r\nü = 'ß'\r".encode(),
    b"a\x0cb\x0bc\n",  # form feed and vertical tab are not line breaks for bytes
]


@pytest.mark.parametrize("data", TEXTS)
def test_lines_read_as_splitlines(data: bytes) -> None:
    lines = TextLines(data)
    assert list(lines) == data.splitlines()
    assert len(lines) == len(data.splitlines())
    assert lines[1:3] == data.splitlines()[1:3]
    assert b"\n".join(lines) == b"\n".join(data.splitlines())
    if lines:
        assert lines[-1] == data.splitlines()[-1]
    with pytest.raises(IndexError):
        lines[len(lines)]


def test_random_line_breaks() -> None:
    generator = random.Random(35)
    for _ in range(3000):
        data = bytes(generator.choice(b"ab\r\n") for _ in range(generator.randint(0, 14)))
        assert list(TextLines(data)) == data.splitlines(), data


def test_summary_columns_are_characters(tmp_path: Path) -> None:
    """ast counts columns in UTF-8 bytes, the report in characters, on any line ending."""
    text = "s = 'é'\r\nopt = AdamW(fused=True)\rz = 'ü'; w = f(1)\n"
    data = text.encode()
    summary = summarise(tmp_path, tmp_path / "m.py", text, data=data)
    assert summary is not None
    assert isinstance(summary.lines, TextLines)
    assert summary.lines.data is data  # one copy of the bytes
    call = summary.calls("f")[0]
    assert (summary.span(call).line, summary.span(call).column) == (3, 13)
    assert summary.source() == "s = 'é'\nopt = AdamW(fused=True)\nz = 'ü'; w = f(1)"
