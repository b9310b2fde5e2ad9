"""The edits an ACF006 fix makes beside the rewritten clip: the Fabric unscale helper inserted
after the module's imports, and the import the clip was the only use of taken out.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.facts import FileFacts
from amp_clipfix.analysis.names import FABRIC_UNSCALE_HELPER
from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE
from amp_clipfix.models import Edit, Span


def is_import_block(statement: ast.stmt) -> bool:
    """An import, or a `try`/`if` block of simple lines that exists to import (as the unscale
    fix's helper insertion reads a module's import section)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if not isinstance(statement, (ast.Try, ast.If)):
        return False
    if isinstance(statement, ast.If):
        test = statement.test
        name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
        if name == "TYPE_CHECKING":
            return True
    inner = [node for node in ast.iter_child_nodes(statement) if isinstance(node, ast.stmt)]
    inner += [line for handler in getattr(statement, "handlers", []) for line in handler.body]
    return all(
        isinstance(s, (ast.Import, ast.ImportFrom, *SIMPLE_STATEMENTS)) or is_import_block(s)
        for s in inner
    ) and any(is_import_block(s) for s in inner)


def helper_insertion(file: FileFacts) -> list[Edit] | None:
    """The edit that puts the Fabric unscale helper after the module's imports with PEP 8 blank
    lines, as the unscale fix inserts it (the same text, so a second fix adds nothing: equal
    edits are made once); none when the module defines it already, None when the module has
    no statement after its imports to put it before."""
    body = file.tree.body
    if any(isinstance(s, ast.FunctionDef) and s.name == FABRIC_UNSCALE_HELPER for s in body):
        return []
    index = 0
    for position, statement in enumerate(body):
        docstring = (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        if is_import_block(statement) or docstring:
            index = position + 1
        elif isinstance(statement, SIMPLE_STATEMENTS) and not any(
            isinstance(n, ast.Name) and n.id == FABRIC_UNSCALE_HELPER for n in ast.walk(statement)
        ):
            continue
        else:
            break
    if index == 0 or index >= len(body):
        return None
    following = body[index]
    first = min([following.lineno, *(d.lineno for d in getattr(following, "decorator_list", []))])
    start = (body[index - 1].end_lineno or body[index - 1].lineno) + 1
    kept = first
    for line in range(start, first):
        if file.line(line).strip():
            kept = line  # comments above the next statement stay with it
            break
    ending = file.newline(start)
    helper = FABRIC_HELPER_SOURCE.replace("\n", ending)
    text = f"{ending}{ending}{helper}{ending}{ending}"
    return [Edit(file.path, Span(start, 0, kept, 0), text)]


SIMPLE_STATEMENTS = (
    ast.Expr,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
    ast.Delete,
    ast.Global,
    ast.Assert,
    ast.Raise,
)


def unused_import(file: FileFacts, func: ast.expr) -> list[Edit]:
    """The `from ... import clip_grad_norm_` the rewritten call was its only use of, taken out
    (the whole statement when it imports nothing else), so the fix leaves no unused import."""
    if not isinstance(func, ast.Name):
        return []
    uses = [n for n in ast.walk(file.tree) if isinstance(n, ast.Name) and n.id == func.id]
    if len(uses) != 1:
        return []
    for statement in file.tree.body:
        if not isinstance(statement, ast.ImportFrom):
            continue
        names = statement.names
        for index, alias in enumerate(names):
            if (alias.asname or alias.name) != func.id:
                continue
            if len(names) == 1:
                start, end = statement.lineno, statement.end_lineno or statement.lineno
                if file.line(start)[: file.span(statement).column].strip():
                    return []
                return [Edit(file.path, Span(start, 0, end + 1, 0), "")]
            here = file.span(alias)
            if index + 1 < len(names):
                after = file.span(names[index + 1])
                return [Edit(file.path, Span(here.line, here.column, after.line, after.column), "")]
            before = file.span(names[index - 1])
            span = Span(before.end_line, before.end_column, here.end_line, here.end_column)
            return [Edit(file.path, span, "")]
    return []
