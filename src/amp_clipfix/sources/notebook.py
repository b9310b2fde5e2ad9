"""Jupyter notebooks: their code cells as one Python module, and edits written back into the JSON.

The code cells, in order, make one module (so a Fabric made in one cell links with a clip call
in another), each cell after a separator comment line. IPython's escapes (cell magics `%%`, line
magics `%`, shell lines `!`, help and autocall), found where IPython finds them and with the lines
a backslash continues them on, become empty comments there (`pass` where indented, as a block
may hold nothing else; an assignment from one keeps its target), so they are never parsed and
never changed.

Which module line belongs to which cell is kept by the tool itself (line ranges), never read back
from text in the code: after a fix, the old and new module are aligned line by line and every new
line goes to the cell of the old line it matches (an inserted line to the cell of the line before
it). Writing back only replaces the `"source"` values of the cells that changed, found by their
offsets in the file; inside them, unchanged lines keep their exact JSON spelling (escapes and
all). Outputs, execution counts, metadata, key order and indentation stay byte for byte.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.paths import unreadable_value
from amp_clipfix.patterns import lazy
from amp_clipfix.records import record
from amp_clipfix.sources import prefilter
from amp_clipfix.sources.base import Document, Language, Rendered, Stage, VerifyError
from amp_clipfix.sources.python import PYTHON_PREFILTER, verify_python
from amp_clipfix.sources.text import SourceError, SourceFile, aligned, decode_source, encode_text

CELL_SEPARATOR = "# amp-clipfix: cell {number}"  # for people reading the module; never parsed


@record(frozen=True)
class CodeCell:
    number: int  # 1-based among all cells, as Jupyter shows them
    text: str  # the cell's source joined
    value_start: int  # offsets of the cell's "source" value in the file text
    value_end: int
    first_line: int  # the cell's first line in the module (1-based)

    @property
    def lines(self) -> list[tuple[str, str]]:
        from amp_clipfix.sources.notebook_json import split_lines

        return split_lines(self.text)


@record(frozen=True)
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
    """A cell's lines as the module holds them: IPython's escapes kept out of the parse, the
    way IPython finds them (inputtransformer2): a cell magic (`%%`) takes the whole cell; an
    escaped command (`!`, `!!`, `%`, `?`, `/`, `,`, `;`, or a whole line `name?`) starts a
    logical line (not inside a string, brackets or a continued line) and goes on over the lines
    that end with a backslash; its lines become `#` (its first `pass` where indented: it may
    be a block's only statement). `x = !cmd` and `x = %magic` keep their assignment of a
    value known only at run time (`x = get_ipython()`, as IPython calls it)."""
    from amp_clipfix.sources.notebook_json import split_lines

    lines = [line for line, _ in split_lines(text)]
    if is_magic_cell(text):
        return ["#" for _ in lines]
    shown: list[str] = []
    scanner = LogicalLines()
    index = 0
    while index < len(lines):
        line = lines[index]
        escaped = escaped_command(line) if scanner.at_start else None
        if escaped is None:
            scanner.feed(line)
            shown.append(line)
            index += 1
            continue
        end = index
        while lines[end].endswith("\\") and end + 1 < len(lines):
            end += 1
        shown.append(escaped)
        shown.extend("#" for _ in range(index + 1, end + 1))
        index = end + 1
    return shown


ESCAPES = ("!", "%", "?", "/", ",", ";")  # IPython's ESCAPE_SINGLES (`!!`, `??` start so too)
ASSIGNED_ESCAPE = lazy(r"^(\s*[\w.,\s\[\]*'\"]+?\s*=)(?!=)\s*(?:!|%(?=[A-Za-z_]))")
# IPython's help at the end of a line (`obj?`, `%magic??`, `module.name?`): inputtransformer2's
# `_help_end_re` over the whole logical line.
HELP_END = lazy(r"^\s*%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+)*\?\??\s*$")


def escaped_command(line: str) -> str | None:
    """What the module holds for a line that starts an IPython escape, else None. The patterns
    are tried only on a line holding what each needs (`?`; `=` and `!` or `%`): most lines
    hold neither, and the patterns backtrack over every line they are tried on."""
    stripped = line.lstrip()
    if stripped.startswith(ESCAPES) or ("?" in line and HELP_END.match(line)):
        # In a block the escape may be the block's only statement (`if IN_COLAB:` over `!pip`
        # lines): there it stays a statement, as IPython's `get_ipython().system(...)` does.
        indent = line[: len(line) - len(stripped)]
        return f"{indent}pass" if indent else "#"
    if "=" not in line or ("!" not in line and "%" not in line):
        return None
    assigned = ASSIGNED_ESCAPE.match(line)
    if assigned is not None:
        return f"{assigned[1]} get_ipython()"
    return None


class LogicalLines:
    """Where Python's logical lines start, line by line: not inside a string (one that a
    backslash continues, or a triple-quoted one), brackets, or after a line that ends with a
    backslash. Only there does IPython look for an escape."""

    def __init__(self) -> None:
        self.quote: str | None = None  # the quote that closes the string we are in
        self.depth = 0
        self.continued = False

    @property
    def at_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        """Read one more line. Only the characters that can change the state are visited
        (found by a pattern, in C): outside a string a `#`, a quote or a bracket; inside one
        a backslash or its closing quote; every other character is passed over as the
        character-by-character reading passed it."""
        index, length, commented = 0, len(line), False
        while index < length:
            if self.quote is not None:
                inside = stops(self.quote).search(line, index)
                if inside is None:
                    break
                if inside.group() == "\\":
                    index = inside.start() + 2  # the escaped character, whatever it is
                else:
                    index = inside.end()
                    self.quote = None
                continue
            found = stops(None).search(line, index)
            if found is None:
                break
            char, index = found.group(), found.start()
            if char == "#":
                commented = True
                break
            if char in "'\"":
                self.quote = line[index : index + 3] if line[index : index + 3] in TRIPLES else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            else:
                self.depth = max(0, self.depth - 1)
            index += 1
        ends_in_backslash = line.endswith("\\") and not commented
        if self.quote is not None and len(self.quote) == 1 and not ends_in_backslash:
            self.quote = None  # a one-quote string ends with its line (else: a syntax error)
        self.continued = self.quote is None and ends_in_backslash


TRIPLES = ("'''", '"""')


@functools.cache
def stops(quote: str | None) -> re.Pattern[str]:
    """What LogicalLines.feed stops at: outside a string (`quote` None) a comment, a quote or
    a bracket; inside one, a backslash or the quote that closes it. Compiled when a notebook
    is first read (every run imports this module)."""
    return re.compile(r"[#'\"()\[\]{}]" if quote is None else r"\\|" + quote)


def read_notebook(source: SourceFile) -> Notebook:
    """Parse the notebook JSON; anything but nbformat 4 with list/str sources is refused.
    (json and the offsets' reader are imported here: a notebook the prefilter drops is never
    parsed.)"""
    import json

    from amp_clipfix.sources.notebook_json import loads_noting_constants, source_value_offsets

    try:  # plain or not (NaN, Infinity) from this parse: the skim needs no other
        document, plain = loads_noting_constants(source.text)
    except json.JSONDecodeError as error:
        raise SourceError(f"not a valid notebook: invalid JSON at line {error.lineno}") from None
    except RecursionError:
        raise SourceError("not a valid notebook: JSON nested too deeply") from None
    except ValueError as error:  # a number too long to read
        raise SourceError(f"not a valid notebook: {unreadable_value(error)}") from None
    if not isinstance(document, dict) or document.get("nbformat") != 4:
        raise SourceError("not a valid notebook: only nbformat 4 is supported")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise SourceError("not a valid notebook: no cell list")
    offsets = source_value_offsets(source.text, plain)
    if len(offsets) != len(cells):
        raise SourceError("not a valid notebook: cannot locate every cell's source")
    code_cells: list[CodeCell] = []
    lines: list[str] = []
    for number, (cell, (start, end)) in enumerate(zip(cells, offsets), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        lines.append(CELL_SEPARATOR.format(number=number))
        text = cell_text(cell.get("source", ""), number)
        code_cells.append(CodeCell(number, text, start, end, len(lines) + 1))
        lines.extend(module_lines(text))
    return Notebook(source, tuple(code_cells), "\n".join(lines) + "\n" if lines else "")


class ReadNotebooks:
    """The notebooks read last, by path, with the bytes they were read from: a run reads a
    notebook for its searchable text, then loads it (NeMo: 96 notebooks read 202 times, 1.2 s).
    The bytes are the run's own (its contents); what is kept is bounded by `limit` bytes.

    What is kept is what the JSON parse made (the code cells and the module), not the decoded
    file text: that is the whole JSON again, outputs and images included, as a `str` of up to
    four bytes a character (NeMo: 12 MB held to the end of the run for 6.7 MB of notebooks).
    The notebook given holds its file as a `NotebookFile`, which does not hold that text
    either (the documents of a run's searches hold their notebooks to the end of the run)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: dict[Path, tuple[bytes, Notebook]] = {}
        self.size = 0

    def read(self, path: Path, data: bytes) -> Notebook:
        known = self.kept.pop(path, None)
        if known is not None:
            self.size -= len(known[0])
            if known[0] == data:
                self.keep(path, known)  # the newest again
                return known[1]
        source = decode_source(path, data)
        notebook = read_notebook(source)
        held = NotebookFile(path, data, "", source.encoding, source.bom)
        notebook = Notebook(held, notebook.cells, notebook.module_text)
        self.keep(path, (data, notebook))
        return notebook

    def keep(self, path: Path, read: tuple[bytes, Notebook]) -> None:
        self.kept[path] = read
        self.size += len(read[0])
        while self.size > self.limit and len(self.kept) > 1:
            self.size -= len(self.kept.pop(next(iter(self.kept)))[0])  # the oldest


class NotebookFile(SourceFile):
    """A notebook's file as read, its text (the whole JSON) decoded from its bytes each time
    it is asked (a fix writing its cells back), not held."""

    @property
    def text(self) -> str:
        return decode_source(self.path, self.data).text


READ = ReadNotebooks(32 << 20)


def notebook_of(path: Path, data: bytes) -> Notebook:
    """read_notebook of the file's bytes, once for the same path and bytes."""
    return READ.read(path, data)


def cell_text(raw: object, number: int) -> str:
    """A cell's source: a string or a list of strings (anything else is refused)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return "".join(raw)
    raise SourceError(f"not a valid notebook: cell {number} has no text source")


def cells_from_module(notebook: Notebook, new_module: str) -> dict[int, str]:
    """The new text of each cell the fixes changed, with its magic lines restored.

    Cells are told apart by the line ranges kept when the module was built: the new module is
    aligned with the old one, and each new line goes to the cell its matching old line (or,
    for an inserted line, the old line before it) belongs to."""
    old = notebook.module_text.split("\n")[:-1]
    new = (new_module[:-1] if new_module.endswith("\n") else new_module).split("\n")
    owners = line_owners(notebook)
    chunks: dict[int, list[tuple[str, int | None]]] = {cell.number: [] for cell in notebook.cells}
    owner = notebook.cells[0].number if notebook.cells else 0
    for old_index, new_index in aligned(old, new):
        if new_index is None:  # a removed line
            assert old_index is not None
            if owners[old_index] < 0:
                raise VerifyError("a fix removed a cell boundary; not fixed")
            continue
        if old_index is not None:
            owner = abs(owners[old_index])
            if owners[old_index] < 0:
                continue  # a separator line, not part of any cell
        chunks[owner].append((new[new_index], old_index))
    changed = {}
    for cell in notebook.cells:
        text = cell_from_chunk(cell, chunks[cell.number], old)
        if text is not None:
            changed[cell.number] = text
    return changed


def line_owners(notebook: Notebook) -> list[int]:
    """For each module line (0-based), the number of its cell; negative for a separator."""
    owners: list[int] = []
    for cell in notebook.cells:
        owners.append(-cell.number)
        owners.extend(cell.number for _ in module_lines(cell.text))
    return owners


def cell_from_chunk(
    cell: CodeCell, chunk: list[tuple[str, int | None]], old: list[str]
) -> str | None:
    """A cell's new text from its module lines, or None when it did not change. Lines that
    match an old line get back that line's original text (a magic) and line ending."""
    originals = cell.lines
    offset = cell.first_line - 1  # module index of the cell's first line
    shown = [line for line, _ in chunk]
    while len(shown) > len(originals) and shown[-1] == "" and originals[-1][0] != "":
        shown.pop()  # blank lines the helper insertion left at the cell's end
        chunk = chunk[:-1]
    if shown == module_lines(cell.text):
        return None
    default_ending = next((ending for _, ending in originals if ending), "\n")
    pieces: list[tuple[str, str]] = []
    for line, old_index in chunk:
        if old_index is not None and old[old_index] == line:
            pieces.append(originals[old_index - offset])
        else:
            pieces.append((line, default_ending))
    pieces[-1] = (pieces[-1][0], originals[-1][1])
    return "".join(line + (ending or default_ending) for line, ending in pieces[:-1]) + "".join(
        pieces[-1]
    )


def notebook_text_with(notebook: Notebook, changed: dict[int, str]) -> str:
    """The notebook file's text with the changed cells' `"source"` values replaced in place."""
    from amp_clipfix.sources.notebook_json import encode_source_value

    text = notebook.source.text
    pieces: list[str] = []
    position = 0
    for cell in notebook.cells:
        if cell.number not in changed:
            continue
        original_value = text[cell.value_start : cell.value_end]
        pieces.append(text[position : cell.value_start])
        pieces.append(encode_source_value(original_value, cell.text, changed[cell.number]))
        position = cell.value_end
    pieces.append(text[position:])
    return "".join(pieces)


class NotebookSource:
    """Jupyter notebooks: their code cells are analysed as one module; only changed cells'
    `"source"` values are rewritten."""

    language = Language.PYTHON

    def handles(self, path: Path) -> bool:
        return path.suffix == ".ipynb"

    def searchable(self, path: Path, data: bytes) -> bytes:
        return notebook_of(path, data).module_text.encode("utf-8")

    def may_mention(self, data: bytes, word: bytes) -> bool:
        return prefilter.json_may_contain(data, word)

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        return PYTHON_PREFILTER[stage]

    def load(self, path: Path, data: bytes) -> Document:
        notebook = notebook_of(path, data)
        return Document(notebook.source, Language.PYTHON, notebook.module_text, self, notebook)

    def locate(self, document: Document, line: int) -> tuple[int | None, int]:
        notebook = document.layout
        assert isinstance(notebook, Notebook)
        return notebook.locate(line)

    def render(self, document: Document, new_text: str, parsed: bool = False) -> Rendered:
        notebook = document.layout
        assert isinstance(notebook, Notebook)
        if not parsed:
            verify_python(document.text, new_text)
        changed = cells_from_module(notebook, new_text)
        text = notebook_text_with(notebook, changed)
        import json

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
