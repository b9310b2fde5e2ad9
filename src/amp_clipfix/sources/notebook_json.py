"""A notebook's JSON read and written exactly: where each cell's `"source"` value lies in the file,
and a changed cell's new value spelled with its unchanged lines' own escapes.
"""

from __future__ import annotations

import json
import re

from amp_clipfix.patterns import lazy
from amp_clipfix.records import record
from amp_clipfix.sources.text import SourceError, aligned

LINE = lazy(r"([^\r\n]*)(\r\n|\r|\n|$)")


def split_lines(text: str) -> list[tuple[str, str]]:
    """(line, ending) pairs; CRLF, CR and LF all end a line, as they do for Python. A text
    ending in a line break has a last, empty line (so `n` breaks give `n + 1` lines)."""
    pairs = []
    position = 0
    while True:
        match = LINE.match(text, position)
        assert match is not None
        pairs.append((match.group(1), match.group(2)))
        if not match.group(2):
            return pairs
        position = match.end()


def encode_source_value(original_value: str, old_text: str, new_text: str) -> str:
    """A JSON `"source"` value in the layout of the one it replaces (list of lines or string);
    lines that did not change keep their original JSON spelling (`\\u00fc` or `ü` alike)."""
    ascii_only = "\\u" in original_value
    spelled = original_spellings(original_value, old_text)
    old_lines = ["".join(pair) for pair in split_lines(old_text)]
    new_lines = [line for line in ("".join(pair) for pair in split_lines(new_text)) if line]
    old_lines = [line for line in old_lines if line]
    keep: dict[int, str] = {}
    if spelled is not None:
        for old_index, new_index in aligned(old_lines, new_lines):
            if old_index is not None and new_index is not None:
                keep[new_index] = spelled[old_index]
    items = [
        keep.get(index) or json.dumps(line, ensure_ascii=ascii_only)
        for index, line in enumerate(new_lines)
    ]
    if not original_value.lstrip().startswith("["):
        return '"' + "".join(item[1:-1] for item in items) + '"' if items else '""'
    if not items:
        return "[]"
    layout = re.match(r"\[(\s*)", original_value)
    opening = layout.group(1) if layout else ""
    closing = re.search(r"(\s*)\]$", original_value)
    closing_space = closing.group(1) if closing else ""
    separator = "," + (opening if "\n" in opening else " ")
    return f"[{opening}{separator.join(items)}{closing_space}]"


def original_spellings(original_value: str, old_text: str) -> list[str] | None:
    """The JSON string token of each line of the old source, as written in the file (a list
    item, or the piece of the one string that spells that line); None when the layout does
    not split into lines (then every line is encoded afresh)."""
    value = original_value.strip()
    if value.startswith("["):
        tokens = [match.group() for match in PositionalJson.STRING.finditer(value)]
    else:
        tokens = ['"' + raw + '"' for raw in raw_line_pieces(value[1:-1])]
    old_lines = ["".join(pair) for pair in split_lines(old_text) if "".join(pair)]
    try:
        decoded = [json.loads(token) for token in tokens]
    except ValueError:
        return None
    return tokens if decoded == old_lines else None


ESCAPE = lazy(r"\\u[0-9a-fA-F]{4}|\\.|.", re.DOTALL)


BREAKS = {
    "\\n": "\n",
    "\\r": "\r",
    "\\u000a": "\n",
    "\\u000A": "\n",
    "\\u000d": "\r",
    "\\u000D": "\r",
}


def raw_line_pieces(raw: str) -> list[str]:
    """Split the inside of a JSON string into the raw pieces that spell each line, ending
    included (CR LF, CR or LF, escaped)."""
    pieces: list[str] = []
    current = ""
    previous_break = ""
    for match in ESCAPE.finditer(raw):
        unit = match.group()
        decoded = BREAKS.get(unit, "")
        if previous_break == "\r" and decoded != "\n":
            pieces.append(current)
            current = ""
        current += unit
        if decoded == "\n":  # LF, or the LF of a CR LF
            pieces.append(current)
            current = ""
        previous_break = decoded if decoded == "\r" else ""
    if current:
        pieces.append(current)
    return pieces


def source_value_offsets(text: str, plain: bool | None = None) -> list[tuple[int, int]]:
    """Offsets of every cell's `"source"` value ((-1, -1) for a cell without one). The standard
    JSON parser gives no positions, so the file is read once more: a text the standard parser
    reads (without NaN or Infinity) is skimmed (cell_sources: only the cells' members are
    looked at, the outputs skipped by their brackets), any other by the small positional
    parser, which also says what is wrong. `plain`: plain_json's answer, when the caller's own
    parse of the text knows it (loads_noting_constants), so the text is not parsed again."""
    if plain is None:
        plain = plain_json(text)
    skimmed = cell_sources(text) if plain else None
    if skimmed is not None:
        return skimmed
    try:
        root = PositionalJson(text).parse().value
        if not isinstance(root, dict):
            raise TypeError("the notebook is not a JSON object")
        cells = root["cells"].value
        if not isinstance(cells, list):
            raise TypeError("no cell list")
        return [
            (cell.value["source"].start, cell.value["source"].end)
            if isinstance(cell.value, dict) and "source" in cell.value
            else (-1, -1)
            for cell in cells
        ]
    except (IndexError, KeyError, TypeError, ValueError) as error:
        raise SourceError(f"not a valid notebook: {error}") from None
    except RecursionError:
        raise SourceError("not a valid notebook: JSON nested too deeply") from None


def plain_json(text: str) -> bool:
    """Whether the standard parser reads the text with no NaN or Infinity (which the
    positional parser refuses)."""

    def refuse(constant: str) -> object:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


def loads_noting_constants(text: str) -> tuple[object, bool]:
    """`json.loads(text)` and plain_json's answer from the same parse: whether no NaN or
    Infinity was read (each is read as the standard parser reads it)."""
    constants: list[str] = []

    def noted(constant: str) -> float:
        constants.append(constant)
        return float(constant)

    return json.loads(text, parse_constant=noted), not constants


STRING_TOKEN = lazy(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
SCALAR_TOKEN = lazy(r"-?[0-9][0-9.eE+-]*|true|false|null")


def cell_sources(text: str) -> list[tuple[int, int]] | None:
    """source_value_offsets of a plain JSON text (plain_json) whose root is an object with a
    list of cells; None for any other (the positional parser says what is wrong). The same
    offsets the positional parser gives: the last `cells` and `source` member counts, as in a
    dict."""
    start = after_space(text, 0)
    if text[start] != "{":
        return None
    root, _ = members(text, start)
    if "cells" not in root or text[root["cells"][0]] != "[":
        return None
    found: list[tuple[int, int]] = []
    index = after_space(text, root["cells"][0] + 1)
    while text[index] != "]":
        if text[index] == "{":
            cell, index = members(text, index)
            found.append(cell.get("source", (-1, -1)))
        else:
            found.append((-1, -1))
            index = value_end(text, index)
        index = after_space(text, index)
        if text[index] == ",":
            index = after_space(text, index + 1)
    return found


def members(text: str, index: int) -> tuple[dict[str, tuple[int, int]], int]:
    """Where each member value of the object at `index` starts and ends (the last of a key),
    and where the object ends."""
    found: dict[str, tuple[int, int]] = {}
    index = after_space(text, index + 1)
    while text[index] != "}":
        key = STRING_TOKEN.match(text, index)
        assert key is not None  # plain JSON
        index = after_space(text, key.end()) + 1  # the colon
        start = after_space(text, index)
        index = value_end(text, start)
        name = key.group()
        found[json.loads(name) if "\\" in name else name[1:-1]] = (start, index)
        index = after_space(text, index)
        if text[index] == ",":
            index = after_space(text, index + 1)
    return found, index + 1


def after_space(text: str, index: int) -> int:
    """The index of the first character at or after `index` that is not JSON white space."""
    while text[index] in " \t\n\r":
        index += 1
    return index


def value_end(text: str, start: int) -> int:
    """The end of the JSON value that starts at `start` (plain JSON): a container's by the
    standard parser's scanner (in C; an output's many lines and images are read in one call),
    which on a plain text reads the whole value and stops at its end."""
    char = text[start]
    if char not in "[{":
        token = (STRING_TOKEN if char == '"' else SCALAR_TOKEN).match(text, start)
        assert token is not None  # plain JSON
        return token.end()
    return SCANNER.raw_decode(text, start)[1]


SCANNER = json.JSONDecoder()


@record(frozen=True)
class JsonNode:
    """A JSON value with its offsets; objects hold dicts of nodes, arrays lists of nodes."""

    value: object
    start: int
    end: int


class PositionalJson:
    """A small JSON parser that keeps where each value starts and ends in the text."""

    SCALAR = lazy(r"-?[0-9][0-9.eE+-]*|true|false|null")
    STRING = lazy(r'"(?:[^"\\]|\\.)*"', re.DOTALL)

    def __init__(self, text: str) -> None:
        self.text = text
        self.index = 0

    def skip_space(self) -> None:
        while self.index < len(self.text) and self.text[self.index] in " \t\n\r":
            self.index += 1

    def expect(self, char: str) -> None:
        self.skip_space()
        if self.text[self.index] != char:
            raise ValueError(f"expected {char!r} at offset {self.index}")
        self.index += 1

    def parse(self) -> JsonNode:
        self.skip_space()
        start = self.index
        char = self.text[start]
        if char == "{":
            self.index += 1
            members: dict[str, JsonNode] = {}
            self.skip_space()
            while self.text[self.index] != "}":
                key = self.parse().value
                self.expect(":")
                members[str(key)] = self.parse()
                self.skip_space()
                if self.text[self.index] == ",":
                    self.index += 1
                    self.skip_space()
            self.index += 1
            return JsonNode(members, start, self.index)
        if char == "[":
            self.index += 1
            items: list[JsonNode] = []
            self.skip_space()
            while self.text[self.index] != "]":
                items.append(self.parse())
                self.skip_space()
                if self.text[self.index] == ",":
                    self.index += 1
                    self.skip_space()
            self.index += 1
            return JsonNode(items, start, self.index)
        pattern = self.STRING if char == '"' else self.SCALAR
        match = pattern.match(self.text, start)
        if match is None:
            raise ValueError(f"unexpected JSON at offset {start}")
        self.index = match.end()
        return JsonNode(json.loads(match.group()), start, self.index)
