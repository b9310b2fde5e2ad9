"""Read Python source files so that writing them back changes nothing but the edits.

The text keeps every byte's meaning: no newline translation (CRLF, CR and mixed endings survive),
the PEP 263 encoding and a UTF-8 BOM are remembered, and `encode_text(source, source.text)` gives
back exactly the bytes that were read. Anything we could not write back faithfully is refused with
a one-line `SourceError` instead.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from pathlib import Path

from amp_clipfix import observed
from amp_clipfix.paths import os_error_reason
from amp_clipfix.patterns import lazy
from amp_clipfix.records import record

# The PEP 263 patterns, as the tokenize module spells them; kept here so that a cookie line with
# non-UTF-8 bytes (legal for Python itself) can still be read.
_COOKIE_RE = lazy(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK_RE = lazy(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
UTF8_ONLY_SUFFIXES = (".yaml", ".yml", ".ipynb")


class SourceError(Exception):
    """A file that cannot be read or written back faithfully; str() is one line for the report."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@record(frozen=True)
class SourceFile:
    """A file's exact bytes plus the text the codemods edit and what is needed to encode it back."""

    path: Path
    data: bytes
    text: str
    encoding: str
    bom: bool


def read_source(path: Path) -> SourceFile:
    """Read `path` strictly: refuse binary, undecodable or mis-declared files with a SourceError."""
    try:
        data = observed.read_bytes(path)
    except OSError as error:
        raise SourceError(f"cannot read: {os_error_reason(error)}") from None
    return decode_source(path, data)


def decode_source(path: Path, data: bytes) -> SourceFile:
    """Decode bytes already read from `path` (the prefilter reads every file once)."""
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes)")

    bom = data.startswith(codecs.BOM_UTF8)
    encoding = _declared_encoding(data, bom) if takes_coding_cookie(path) else "utf-8"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as error:
        offset = error.start + (len(codecs.BOM_UTF8) if bom else 0)
        raise SourceError(f"cannot decode as {encoding} at byte {offset}") from None
    except LookupError:
        raise SourceError(f"unknown encoding: {encoding} (not a text encoding)") from None
    # Stateful or BOM-writing codecs (utf-16, iso-2022-*) may not give the same bytes back; such a
    # file could only be damaged by an edit, so it is refused up front.
    if _encode_or_none(text, encoding) != body:
        raise SourceError(f"encoding {encoding} does not round-trip; not editable")
    return SourceFile(path=as_path(path), data=data, text=text, encoding=encoding, bom=bom)


def decodes_to_itself(data: bytes) -> bool:
    """Whether `decode_source` gives a text whose UTF-8 is `data` itself, told without
    decoding: ASCII bytes (so no BOM) without NUL, in whose first two lines no coding cookie
    can be read (the codec is then utf-8, as `_declared_encoding` says; ASCII decodes to
    itself and encodes back the same)."""
    return (
        data.isascii()
        and b"\x00" not in data
        and not any(b"coding" in line for line in first_two_lines(data))
    )


def takes_coding_cookie(path: Path) -> bool:
    """Only Python files declare their encoding (PEP 263). YAML and notebook JSON are UTF-8 by
    their specs, so `# video coding: h264` in a config is just a comment."""
    return as_path(path).suffix not in UTF8_ONLY_SUFFIXES


def as_path(path: str | Path) -> Path:
    """`path` as a Path: itself when it is one (`Path(path)` parses a Path's parts again, and
    the new one finds its text and hash again: each raises an AttributeError once)."""
    return path if isinstance(path, Path) else Path(path)


def encode_text(source: SourceFile, text: str) -> bytes:
    """Encode edited text the way `source` was encoded, BOM included."""
    try:
        encoded = text.encode(source.encoding)
    except UnicodeEncodeError as error:
        character = error.object[error.start]
        line = _line_number(text, error.start)
        raise SourceError(
            f"cannot encode {character!r} as {source.encoding} (line {line})"
        ) from None
    return codecs.BOM_UTF8 + encoded if source.bom else encoded


LINE_BREAK = lazy(r"\r\n|\r|\n")  # the line breaks Python and YAML count


def line_starts(text: str) -> list[int]:
    """The offset where each line of `text` starts (line 1 at index 0)."""
    return [0, *(match.end() for match in LINE_BREAK.finditer(text))]


LINE_WITH_ENDING = lazy(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
DROPPABLE = frozenset(" \t\f")


def restore_dropped_whitespace(original: str, round_trip: str, new: str) -> str | None:
    """Give back the form feeds (^L) libcst drops at the start of a line (`\fdef f():` comes back
    as `def f():`): each one goes back on the line of the edited code that matches its line.
    None when the round trip lost something else."""
    old_lines = LINE_WITH_ENDING.findall(original)
    kept_lines = LINE_WITH_ENDING.findall(round_trip)
    if len(old_lines) != len(kept_lines):
        return None
    prefixes = []
    for old, kept in zip(old_lines, kept_lines):
        prefix = old[: len(old) - len(kept)]
        if not old.endswith(kept) or not DROPPABLE.issuperset(prefix):
            return None
        prefixes.append(prefix)
    new_lines = LINE_WITH_ENDING.findall(new)
    return "".join(
        (prefixes[old_index] if old_index is not None else "") + new_lines[new_index]
        for old_index, new_index in aligned(kept_lines, new_lines)
        if new_index is not None
    )


def aligned(old: Sequence[str], new: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """A minimal line alignment (Myers): (old index, new index) pairs in order, None on the side
    where a line was inserted or removed."""
    trace: list[dict[int, int]] = []
    furthest: dict[int, int] = {1: 0}
    n, m = len(old), len(new)
    for depth in range(n + m + 1):
        trace.append(dict(furthest))
        for k in range(-depth, depth + 1, 2):
            down = k == -depth or (k != depth and furthest[k - 1] < furthest[k + 1])
            x = furthest[k + 1] if down else furthest[k - 1] + 1
            y = x - k
            while x < n and y < m and old[x] == new[y]:
                x, y = x + 1, y + 1
            furthest[k] = x
            if x >= n and y >= m:
                return backtrack(trace, old, new, depth)
    raise AssertionError("unreachable")


def backtrack(
    trace: list[dict[int, int]], old: Sequence[str], new: Sequence[str], depth: int
) -> list[tuple[int | None, int | None]]:
    pairs: list[tuple[int | None, int | None]] = []
    x, y = len(old), len(new)
    for d in range(depth, 0, -1):
        furthest = trace[d]
        k = x - y
        down = k == -d or (k != d and furthest[k - 1] < furthest[k + 1])
        previous_k = k + 1 if down else k - 1
        previous_x = furthest[previous_k]
        previous_y = previous_x - previous_k
        while x > previous_x and y > previous_y:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        if down:
            y -= 1
            pairs.append((None, y))
        else:
            x -= 1
            pairs.append((x, None))
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        pairs.append((x, y))
    return pairs[::-1]


HEAD = 512  # bytes that hold a module's first two lines, in all but odd files (about ten lines)


def first_two_lines(data: bytes) -> list[bytes]:
    """`data.splitlines(keepends=True)[:2]` without splitting the whole text (a bytes object
    per line: most of a decode's cost for a large module). A head of HEAD bytes that holds a
    third line start ends its first two lines exactly as the whole text does (only a head's
    last line may lose the `\\n` of a `\\r\\n` cut in two)."""
    head = data[:HEAD]
    lines = head.splitlines(keepends=True)
    if len(lines) > 2 or len(head) == len(data):
        return lines[:2]
    return data.splitlines(keepends=True)[:2]


def _declared_encoding(data: bytes, bom: bool) -> str:
    """The codec named by the PEP 263 cookie (utf-8 by default), as Python itself would pick it."""
    # Only the first two lines can carry a cookie. Splitting on CR too matters for old-Mac files,
    # where a plain readline() would hand over the whole file as one line.
    first_lines = first_two_lines(data)
    if not any(b"coding" in line for line in first_lines):
        return "utf-8"  # no cookie can be read (tokenize's and _COOKIE_RE need the word)
    import tokenize  # here: its regexes are built when it is imported

    try:
        detected, _ = tokenize.detect_encoding(iter(first_lines).__next__)
    except SyntaxError as error:
        if not str(error.msg).startswith("invalid or missing encoding declaration"):
            raise SourceError(f"bad encoding declaration: {error.msg}") from None
        # The cookie line itself holds non-UTF-8 bytes (e.g. a latin-1 comment after the cookie).
        detected = _cookie_in_raw_lines(first_lines, bom)
    if detected == "utf-8-sig":
        return "utf-8"
    return codecs.lookup(detected).name


def _cookie_in_raw_lines(lines: list[bytes], bom: bool) -> str:
    """Find the cookie without assuming UTF-8; the fallback when tokenize cannot decode a line."""
    if bom and lines:
        lines = [lines[0][len(codecs.BOM_UTF8) :], *lines[1:]]
    for index, line in enumerate(lines):
        match = _COOKIE_RE.match(line.decode("latin-1"))
        if match:
            name = match.group(1)
            try:
                codec_name = codecs.lookup(name).name
            except LookupError:
                raise SourceError(f"bad encoding declaration: unknown encoding: {name}") from None
            if bom and codec_name != "utf-8":
                raise SourceError("bad encoding declaration: encoding problem: utf-8") from None
            return codec_name
        if index == 0 and not _BLANK_RE.match(line):
            break
    return "utf-8"


def _encode_or_none(text: str, encoding: str) -> bytes | None:
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return None


def _line_number(text: str, index: int) -> int:
    """1-based line of `index`, counting CRLF, CR and LF endings alike."""
    before = text[:index]
    return before.count("\n") + before.count("\r") - before.count("\r\n") + 1
