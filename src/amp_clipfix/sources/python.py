"""Python modules: decoded exactly (sources/text.py), written back only when they still parse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.sources import prefilter
from amp_clipfix.sources.base import Document, Language, Rendered, Stage, VerifyError
from amp_clipfix.sources.text import SourceError, decode_source, encode_text

if TYPE_CHECKING:
    import ast

    import libcst as cst

MAX_NESTING = 1000

PYTHON_PREFILTER: dict[Stage, Callable[[bytes], bool]] = {
    Stage.FUSED_OPTIMIZER: prefilter.may_have_fused_optimizer,
    Stage.TRAINER: prefilter.may_configure_trainer,
}


class PythonSource:
    language = Language.PYTHON

    def handles(self, path: Path) -> bool:
        return True  # the fallback: every file named that no other adapter takes

    def searchable(self, path: Path, data: bytes) -> bytes:
        return data

    # the prefilter reads the bytes themselves: `holds` itself, which it may ask of many
    # texts joined (prefilter.holds_any)
    may_mention = staticmethod(prefilter.holds)

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        return PYTHON_PREFILTER[stage]

    def load(self, path: Path, data: bytes) -> Document:
        source = decode_source(path, data)
        return Document(source, Language.PYTHON, source.text, self)

    def locate(self, document: Document, line: int) -> tuple[int | None, int]:
        return None, line

    def render(self, document: Document, new_text: str, parsed: bool = False) -> Rendered:
        if not parsed:
            verify_python(document.text, new_text)
        try:
            return Rendered(encode_text(document.source, new_text))
        except SourceError as error:
            raise VerifyError(str(error)) from None


def parse_libcst(text: str) -> cst.Module:
    """The libcst tree a fix transforms. Sites are read with `ast`, so this runs only for a
    file about to be fixed; a file libcst cannot read fails here with one line."""
    import libcst as cst

    check_nesting(text)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise SourceError(f"cannot parse: {' '.join(error.message.split())}") from None
    except RecursionError:
        raise SourceError("cannot parse: the code is nested too deeply") from None


def check_nesting(text: str) -> None:
    """libcst's native parser overflows its stack (and kills the process) on code nested deeper
    than Python itself accepts, so Python's parser looks first. Depth is counted the way libcst
    builds its tree (measured: 8,000 `and` operands crash it, 7,000 do not). It costs seconds
    on a big module, so it runs only right before a libcst parse (`parse_libcst`)."""
    problem = nesting_problem(text)
    if problem is not None:
        raise SourceError(f"cannot parse: {problem}")


def ignore_compile_warnings() -> None:
    """The user's code is parsed, never run: what Python says while compiling it (an invalid
    escape `"\\d"`: a SyntaxWarning from Python 3.12, a DeprecationWarning before, printed as
    `<unknown>:4: ...` with no file) is not the tool's output. Set for a run by
    running.execute, and in each parsing process (parse_pool)."""
    import warnings

    warnings.filterwarnings("ignore", category=SyntaxWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning, message="invalid escape")


def nesting_problem(text: str) -> str | None:
    import ast  # here: only a file that is parsed or fixed needs it

    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return error.msg if "nested" in error.msg else None
    except (RecursionError, MemoryError):
        return "the code is nested too deeply"
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return "the code is nested too deeply"
        # Python keeps `a and b and c ...` flat; libcst nests one level per operand.
        step = len(node.values) if isinstance(node, ast.BoolOp) else 1
        stack.extend((child, depth + step) for child in ast.iter_child_nodes(node))
    return None


def verify_python(original: str, new: str) -> ast.Module | None:
    """A codemod's output (printed from libcst's tree) must parse with libcst, which a later
    codemod round transforms it with, and with Python's own parser where the old code did
    (`verify_syntax`, whose `ast` tree it gives)."""
    import libcst as cst  # only files a codemod changes reach this

    try:
        cst.parse_module(new)
    except cst.ParserSyntaxError as error:
        raise VerifyError(f"fixed code does not parse: {error.message}") from None
    return verify_syntax(original, new)


def verify_syntax(original: str, new: str) -> ast.Module | None:
    """The new code must parse with Python's own parser where the old did: the check of a
    rule's own text edits (of a module Python parsed; no libcst tree is made or printed, so
    libcst is neither imported nor asked: a codemod of a later round parses the file with
    `parse_libcst`, which says in one line when it cannot). Gives the new code's `ast` tree
    when Python parses it (fixes/layout.py reads that tree), else None. The old code is
    parsed only when the new does not: where the new parses, it decides nothing."""
    import ast

    try:
        return ast.parse(new)
    except (SyntaxError, ValueError) as error:
        failure = error
    try:
        ast.parse(original)
    except (SyntaxError, ValueError):
        return None
    raise VerifyError(f"fixed code does not parse: {failure}") from None
