"""`helper-module = "mypkg.amp_helpers"`: the fixes import their helpers from one module of the
project instead of each fixed module getting its own copy (issue 13, the user's choice).

The codemods insert helpers as usual; afterwards the helpers a fix added to a module are taken
out again and imported instead, in the place isort (ruff I001) sorts a first-party import to.
The helper module itself is created, or the missing helpers are added to it, once per run
(pipeline.py); the same insertion code that puts a helper into a user's module puts it there, so
adding twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import libcst as cst

from amp_clipfix import observed
from amp_clipfix.fixes.codemods.guard_helper import (
    HELPER_NAME,
    HELPER_SOURCE,
    NORM_HELPER_NAME,
    NORM_HELPER_SOURCE,
)
from amp_clipfix.fixes.codemods.insert import has_helper, insert_helper
from amp_clipfix.fixes.codemods.unscale_helper import HELPER_SOURCES

HELPERS: dict[str, str] = {
    **HELPER_SOURCES,
    HELPER_NAME: HELPER_SOURCE,
    NORM_HELPER_NAME: NORM_HELPER_SOURCE,
}
MODULE_DOCSTRING = '"""Helpers the amp-clipfix fixes call (created by amp-clipfix)."""\n'


def helper_module_source(existing: str | None, names: Iterable[str]) -> str:
    """The module's text with every helper of `names` defined once (in name order). An
    existing module that does not parse (merge-conflict markers) raises SourceError: one line,
    nothing written."""
    from amp_clipfix.sources.python import parse_libcst

    module = parse_libcst(existing if existing is not None else MODULE_DOCSTRING)
    for name in sorted(set(names), reverse=True):  # each goes after the imports: reversed
        if not has_helper(module, name):
            module = insert_helper(module, HELPERS[name])
    code = module.code
    return code if code.endswith("\n") else code + "\n"


def added_helpers(original: cst.Module, fixed: cst.Module) -> list[str]:
    """The known helpers the fixes defined in this module (not those it had already)."""
    before = {s.name.value for s in original.body if isinstance(s, cst.FunctionDef)}
    return [
        statement.name.value
        for statement in fixed.body
        if isinstance(statement, cst.FunctionDef)
        and statement.name.value in HELPERS
        and statement.name.value not in before
    ]


def import_helpers(
    original: cst.Module, fixed: cst.Module, dotted: str, root: Path
) -> tuple[cst.Module, list[str]]:
    """`fixed` with the helpers the fixes inserted replaced by `from <dotted> import ...`, and
    their names (none: `fixed` unchanged)."""
    names = added_helpers(original, fixed)
    if not names:
        return fixed, []
    body = list(fixed.body)
    first = next(i for i, s in enumerate(body) if is_helper(s, names))
    body = [s for s in body if not is_helper(s, names)]
    if first < len(body) and first < len(original.body):
        # insert_helper gave the next statement PEP 8's two blank lines: give back its own
        body[first] = body[first].with_changes(leading_lines=original.body[first].leading_lines)
    module = fixed.with_changes(body=body)
    return add_import(module, dotted, names, FirstParty(dotted, root)), names


def is_helper(statement: cst.BaseStatement, names: Sequence[str]) -> bool:
    return isinstance(statement, cst.FunctionDef) and statement.name.value in names


class FirstParty:
    """Whether a top-level module name is the project's own, as ruff's isort decides it (a
    folder or `.py` file of that name at the project root or under `src/`)."""

    def __init__(self, dotted: str, root: Path) -> None:
        self.own = dotted.split(".")[0]
        self.root = root

    def __call__(self, name: str) -> bool:
        return name == self.own or any(
            observed.is_dir(base / name) or observed.is_file(base / f"{name}.py")
            for base in (self.root, self.root / "src")
        )


def import_module_name(statement: cst.BaseStatement) -> str | None:
    """The module a top-level `import x` / `from x import y` line names ('' when relative)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return cst.Module([]).code_for_node(small.names[0].name)
    if isinstance(small, cst.ImportFrom):
        if small.relative or small.module is None:
            return ""
        return cst.Module([]).code_for_node(small.module)
    return None


def leading_imports(body: Sequence[cst.BaseStatement], start: int) -> list[tuple[int, str, bool]]:
    """(index, module name, is a `from` line) of the import lines the module starts with."""
    block = []
    for index in range(start, len(body)):
        statement = body[index]
        name = import_module_name(statement)
        if name is None:
            break
        is_from = isinstance(statement, cst.SimpleStatementLine) and isinstance(
            statement.body[0], cst.ImportFrom
        )
        block.append((index, name, is_from))
    return block


def add_import(
    module: cst.Module, dotted: str, names: Sequence[str], first_party: FirstParty
) -> cst.Module:
    """Add `from <dotted> import names` where isort puts it: among the first-party `from`
    imports of the leading import block, sorted by module; a section of its own after the
    third-party imports when there are none (one blank line around it)."""
    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    block = leading_imports(body, start)
    new = cst.parse_statement(f"from {dotted} import {', '.join(sorted(names))}")
    own = [
        (i, name, is_from) for i, name, is_from in block if name and first_party(name.split(".")[0])
    ]
    if own:
        later = [i for i, name, is_from in own if is_from and name.lower() > dotted.lower()]
        at = later[0] if later else own[-1][0] + 1
        if later and later[0] == own[0][0]:  # it opens the section: take its blank line
            new = new.with_changes(leading_lines=body[at].leading_lines)
            body[at] = body[at].with_changes(leading_lines=())
    else:
        absolute = [i for i, name, _ in block if name]
        at = absolute[-1] + 1 if absolute else (block[0][0] if block else start)
        if at > 0:
            new = new.with_changes(leading_lines=(cst.EmptyLine(),))
        if at < len(body) and import_module_name(body[at]) == "" and not body[at].leading_lines:
            body[at] = body[at].with_changes(leading_lines=(cst.EmptyLine(),))
    if at < len(body) and import_module_name(body[at]) is None and not body[at].leading_lines:
        blank = 2 if isinstance(body[at], (cst.FunctionDef, cst.ClassDef)) else 1
        body[at] = body[at].with_changes(leading_lines=(cst.EmptyLine(),) * blank)
    body.insert(at, new)
    return module.with_changes(body=body)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
