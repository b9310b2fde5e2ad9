"""Jupyter notebooks: their code cells as one Python module, and edits written back into the JSON.

The code cells, in order, make one module (so a Fabric made in one cell links with a clip call
in another), each cell after a marker comment line. IPython magics and shell lines (`%`, `%%`,
`!`) become empty comments there, so they are never parsed and never changed. Writing back only
replaces the `"source"` values of the cells that changed, found by their byte offsets in the
file: outputs, execution counts, metadata, key order and indentation stay byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amp_clipfix.sources.base import Document, Language, Rendered, Stage, VerifyError
from amp_clipfix.sources.python import PYTHON_PREFILTER, check_nesting, verify_python
from amp_clipfix.sources.text import SourceError, SourceFile, decode_source, encode_text

CELL_MARKER = "# amp-clipfix: cell {number}"
CELL_MARKER_LINE = re.compile(r"^# amp-clipfix: cell (\d+)$")
MAGIC = re.compile(r"^\s*(%|!)")


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based among all cells, as Jupyter shows them
    text: str  # the cell's source joined
    value_start: int  # byte offsets of the cell's "source" value in the file
    value_end: int
    first_line: int  # the cell's first line in the module (1-based)


@dataclass(frozen=True)
class Notebook:
    source: SourceFile
    cells: tuple[CodeCell, ...]
    module_text: str

    def locate(self, module_line: int) -> tuple[int, int]:
        """(cell number, 1-based line in the cell) of a line of the module."""
        cell = self.cells[0]
        for candidate in self.cells:
            if candidate.first_line <= module_line:
                cell = candidate
        return cell.number, module_line - cell.first_line + 1


def is_magic_cell(text: str) -> bool:
    return text.lstrip().startswith("%%")


def module_lines(text: str) -> list[str]:
    """A cell's lines as the module holds them: magics blanked to `#`."""
    if is_magic_cell(text):
        return ["#" for _ in text.split("\n")]
    return ["#" if MAGIC.match(line) else line for line in text.split("\n")]


def read_notebook(source: SourceFile) -> Notebook:
    """Parse the notebook JSON; anything but nbformat 4 with list/str sources is refused."""
    try:
        document = json.loads(source.text)
    except json.JSONDecodeError as error:
        raise SourceError(f"not a valid notebook: invalid JSON at line {error.lineno}") from None
    if not isinstance(document, dict) or document.get("nbformat") != 4:
        raise SourceError("not a valid notebook: only nbformat 4 is supported")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise SourceError("not a valid notebook: no cell list")
    offsets = source_value_offsets(source.text)
    if len(offsets) != len(cells):
        raise SourceError("not a valid notebook: cannot locate every cell's source")
    code_cells: list[CodeCell] = []
    lines: list[str] = []
    for number, (cell, (start, end)) in enumerate(zip(cells, offsets), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        text = "".join(raw) if isinstance(raw, list) else raw
        if not isinstance(text, str):
            raise SourceError(f"not a valid notebook: cell {number} has no text source")
        lines.append(CELL_MARKER.format(number=number))
        code_cells.append(CodeCell(number, text, start, end, len(lines) + 1))
        lines.extend(module_lines(text))
    return Notebook(source, tuple(code_cells), "\n".join(lines) + "\n" if lines else "")


def cells_from_module(notebook: Notebook, new_module: str) -> dict[int, str]:
    """The new text of each cell the fixes changed, with its magic lines restored."""
    body = new_module[:-1] if new_module.endswith("\n") else new_module
    chunks: dict[int, list[str]] = {}
    current: list[str] = []
    for line in body.split("\n"):
        marker = CELL_MARKER_LINE.match(line)
        if marker:
            current = chunks.setdefault(int(marker.group(1)), [])
        else:
            current.append(line)
    changed = {}
    for cell in notebook.cells:
        old_lines = module_lines(cell.text)
        new_lines = chunks.get(cell.number, [])
        while len(new_lines) > len(old_lines) and new_lines[-1] == "" and old_lines[-1] != "":
            new_lines.pop()  # blank lines the helper insertion left at the cell's end
        if new_lines == old_lines:
            continue
        # Fixes never add or remove bare `#` lines, so the placeholders come back in order.
        placeholders = iter(
            original for original, shown in zip(cell.text.split("\n"), old_lines) if shown == "#"
        )
        restored = [next(placeholders, line) if line == "#" else line for line in new_lines]
        changed[cell.number] = "\n".join(restored)
    return changed


def notebook_text_with(notebook: Notebook, changed: dict[int, str]) -> str:
    """The notebook file's text with the changed cells' `"source"` values replaced in place."""
    text = notebook.source.text
    pieces: list[str] = []
    position = 0
    for cell in notebook.cells:
        if cell.number not in changed:
            continue
        original_value = text[cell.value_start : cell.value_end]
        pieces.append(text[position : cell.value_start])
        pieces.append(encode_source_value(original_value, changed[cell.number]))
        position = cell.value_end
    pieces.append(text[position:])
    return "".join(pieces)


def encode_source_value(original_value: str, new_text: str) -> str:
    """A JSON `"source"` value in the layout of the one it replaces (list of lines or string)."""
    ascii_only = "\\u" in original_value
    if not original_value.lstrip().startswith("["):
        return json.dumps(new_text, ensure_ascii=ascii_only)
    lines = new_text.splitlines(keepends=True)
    if not lines:
        return "[]"
    layout = re.match(r"\[(\s*)", original_value)
    opening = layout.group(1) if layout else ""
    closing = re.search(r"(\s*)\]$", original_value)
    closing_space = closing.group(1) if closing else ""
    separator = "," + (opening if "\n" in opening else " ")
    items = separator.join(json.dumps(line, ensure_ascii=ascii_only) for line in lines)
    return f"[{opening}{items}{closing_space}]"


def source_value_offsets(text: str) -> list[tuple[int, int]]:
    """Offsets of every cell's `"source"` value ((-1, -1) for a cell without one). The standard
    JSON parser gives no positions, so the file is read once more by a small positional one."""
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


@dataclass(frozen=True)
class JsonNode:
    """A JSON value with its offsets; objects hold dicts of nodes, arrays lists of nodes."""

    value: object
    start: int
    end: int


class PositionalJson:
    """A small JSON parser that keeps where each value starts and ends in the text."""

    SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
    STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)

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


class NotebookSource:
    """Jupyter notebooks: their code cells are analysed as one module; only changed cells'
    `"source"` values are rewritten."""

    language = Language.PYTHON

    def handles(self, path: Path) -> bool:
        return path.suffix == ".ipynb"

    def searchable(self, path: Path, data: bytes) -> bytes:
        return read_notebook(decode_source(path, data)).module_text.encode("utf-8")

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        return PYTHON_PREFILTER[stage]

    def load(self, path: Path, data: bytes) -> Document:
        notebook = read_notebook(decode_source(path, data))
        check_nesting(notebook.module_text)
        return Document(notebook.source, Language.PYTHON, notebook.module_text, self, notebook)

    def locate(self, document: Document, line: int) -> tuple[int | None, int]:
        notebook = document.layout
        assert isinstance(notebook, Notebook)
        return notebook.locate(line)

    def render(self, document: Document, new_text: str) -> Rendered:
        notebook = document.layout
        assert isinstance(notebook, Notebook)
        verify_python(document.text, new_text)
        changed = cells_from_module(notebook, new_text)
        text = notebook_text_with(notebook, changed)
        try:
            json.loads(text)
        except ValueError:
            raise VerifyError("the fixed notebook is not valid JSON") from None
        old_cells = {cell.number: cell.text for cell in notebook.cells}
        cells = tuple((number, old_cells[number], new) for number, new in sorted(changed.items()))
        try:
            return Rendered(encode_text(notebook.source, text), cells)
        except SourceError as error:
            raise VerifyError(str(error)) from None
