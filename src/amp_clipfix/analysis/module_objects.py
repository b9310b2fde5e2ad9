"""Where a project function may be reached other than by its bare name: as a value (written
other than as a call's callee), or as an attribute of a module object.

A module-level function `f` of module `pkg.mod` runs from `x.f(...)` only where `x` may hold the
module object `pkg.mod` (or a module importing `f` by its name). A module object is made by an
import statement alone (no module is made from a string here: `importlib`, `sys.modules`):
`import pkg.mod` binds `pkg`, `import pkg.mod as m` binds `mod`, `from pkg import mod` binds
`mod`, `from pkg import *` the submodules `pkg` holds; from `pkg` on, `pkg.mod` is an attribute.
So where no file's import binds the module or a package above it, no expression holds it,
whatever attributes the code writes (`model.train()` is no call of `train.py`'s functions). A
package's `__init__.py` also reads its submodules as its own globals once they are imported
anywhere: there any identifier of that name may be one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis.literal_words import COMMENT, literals_of
from amp_clipfix.analysis.name_uses import (
    ATTR_WRITTEN,
    CALLED,
    GLOBAL,
    IMPORTED,
    READ,
    RENAMED,
    STORED,
    STRING,
    WRITTEN,
    name_uses,
)
from amp_clipfix.analysis.recording import PREDICATES
from amp_clipfix.analysis.summary import Summary, import_base, module_name
from amp_clipfix.sources.prefilter import word_start

WRITES_VALUE = "writes_value"  # the value test of a file's text (recording.PREDICATES)


def module_names(root: Path, path: Path) -> set[str]:
    """The last names of the module a file is and of every package above it under the root
    (a package's `__init__.py`: the package's own and those above): a module object of any of
    them reaches the file's functions by attributes."""
    dotted, _ = module_name(root, path)
    return {last_module_name(path), *(part for part in dotted.split(".") if part)}


def binds_module(
    summary: Summary, name: str, module_like: Callable[[str], bool] | None = None
) -> bool:
    """The module's import statements may bind a module object whose last name is `name`:
    `import a.b` binds `a`, `import a.b as c` binds `b`, `from a import b [as c]` binds `b`
    where it is a submodule (`module_like(dotted)`, of its qualified name; none given: it may
    be), `from a import *` what `a` holds (a relative `from . import *`: anything)."""
    for node in summary.walked_statements_with(b"import"):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if (parts[-1] if alias.asname else parts[0]) == name:
                    return True
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    if node.module is None or node.module.split(".")[-1] == name:
                        return True
                elif alias.name == name:
                    base = import_base(summary, node)
                    if module_like is None or module_like(f"{base}.{name}".lstrip(".")):
                        return True
    return False


def last_module_name(path: Path) -> str:
    """The last name of the module a file is (a package's `__init__.py`: the package's, the
    root's own folder too), as `from ... import` names it; summary.module_name is the
    whole dotted name under the root."""
    return path.parent.name if path.stem == "__init__" else path.stem


def written_as_value(tree: ast.Module, name: str) -> bool:
    """The module writes `name` other than as a call's callee, the function's own `def` or a
    plain name stored to: a name or attribute read as a value, an attribute stored to, a
    renamed import, a string equal to it, a `global` naming it."""
    stops = READ | STORED | ATTR_WRITTEN | RENAMED | STRING | GLOBAL
    return name_uses(tree, frozenset((name,)), stops) is None


def written_as_identifier(tree: ast.Module, name: str) -> bool:
    """The module writes `name` as a Name or an Attribute (any use) or in an import clause's
    dotted names (`import pkg.name`, `from pkg.name import x`, `... as name`); a string or a
    `global` alone is no identifier a module object can be reached by."""
    stops = READ | STORED | WRITTEN | CALLED | IMPORTED
    return name_uses(tree, frozenset((name,)), stops) is None


@functools.cache
def value_written(word: bytes) -> re.Pattern[bytes]:
    """The word as a whole word not followed by a `(` on its line (`f = g` then `(x)`: a value)."""
    return re.compile(word_start(word) + rb"(?![A-Za-z0-9_])(?![ \t]*\()")


def writes_value(path: Path | None, data: bytes, name: str) -> bool:
    """The text may write the name as a value (clip_tail's question, value_sites.py): other
    than right before a `(` (a call, a `def`), in code (a name or attribute read, an import
    clause) or as a whole string literal (`getattr(m, "name")`; a line continuation in it is
    no character of its value); not in a comment, nor as a word of a longer string (a
    docstring, a message: concatenated to others, its value only grows). Where the lexer
    cannot tell (a text not plain ASCII, a field it cannot read), any writing before a line's
    `#` counts; the parse decides."""
    word = name.encode("ascii")
    found = list(value_written(word).finditer(data))
    if not found:
        return False
    if data.isascii():
        literals = literals_of(data)  # lexed only as far as the writings asked about
        if literals.readable:
            for match in found:
                index = literals.at(match.start())
                if index < 0:
                    return True  # in code
                if literals.kind(index) != COMMENT and string_value(literals.text(index)) == word:
                    return True
            return False
    for match in found:
        line = data[data.rfind(b"\n", 0, match.start()) + 1 : match.start()]
        comment = line.find(b"#")
        if comment < 0 or b"'" in line[:comment] or b'"' in line[:comment]:
            return True
    return False


def string_value(text: bytes) -> bytes:
    """A literal's text without its line continuations (backslash, line break)."""
    return text.replace(b"\\\r\n", b"").replace(b"\\\n", b"")


PREDICATES[WRITES_VALUE] = writes_value

IMPORTS_PLAINLY = "imports_plainly"  # recording.PREDICATES


@functools.lru_cache(maxsize=256)
def plain_import(name: str) -> re.Pattern[bytes]:
    """`import name`, `import name as x` or `import name, other` to its line's end, compiled
    once per name: a line holding only blanks before it (`plain_import_lines`) binds a module
    object of that name (binds_module). The pattern starts with its literal, which `re`
    looks for fast; one starting `^[ \t]*` (re.M) was tried at every position of the text."""
    word = re.escape(name.encode("ascii"))
    return re.compile(rb"import[ \t]+" + word + rb"[ \t]*(?:as[ \t]|,|;|#|\r?$)", re.M)


def plain_import_lines(data: bytes, name: str) -> list[int]:
    """Where each line `[ \t]*import name...` (as `plain_import`) starts, in order: what the
    pattern `^[ \t]*import[ \t]+name...` (re.M) finds. Its matches lie on one line each, so
    one is found at its `import` whatever comes before it."""
    starts = []
    for match in plain_import(name).finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        if not data[start : match.start()].strip(b" \t"):
            starts.append(start)
    return starts


def imports_plainly(path: Path | None, data: bytes, name: str) -> bool:
    """The text binds a module object named `name`, known without a parse: such a line in
    code. One in a string or a comment (a docstring's usage: `import train`) is none, and
    where the lexer cannot tell (a text not plain ASCII) the parse decides."""
    found = plain_import_lines(data, name)
    if not found or not data.isascii():
        return False
    literals = literals_of(data)
    return literals.readable and any(literals.at(start) < 0 for start in found)


PREDICATES[IMPORTS_PLAINLY] = imports_plainly
