"""Insert a helper function that a fix needs into the user's module, once, after its imports.

The guard and unscale fixes call small helpers of their own; each is kept as source text so the
inserted code is exactly what the runtime tests run.
"""

from __future__ import annotations

import libcst as cst


def has_helper(module: cst.Module, name: str) -> bool:
    """Whether the module already defines the helper at top level (inserting is idempotent)."""
    return any(
        isinstance(statement, cst.FunctionDef) and statement.name.value == name
        for statement in module.body
    )


def is_preamble(index: int, statement: cst.BaseStatement) -> bool:
    """Docstring, imports and `__future__` lines, after which the helper goes."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    if all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body):
        return True
    return (
        index == 0
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def insert_helper(module: cst.Module, helper_source: str) -> cst.Module:
    """Insert the helper after the leading imports, with PEP 8 blank lines around it."""
    helper_module = cst.parse_module(helper_source.replace("\n", module.default_newline))
    helper = helper_module.body[0]
    body = list(module.body)
    index = 0
    while index < len(body) and is_preamble(index, body[index]):
        index += 1
    two_blank_lines = (cst.EmptyLine(), cst.EmptyLine())
    helper = helper.with_changes(leading_lines=two_blank_lines if index else ())
    if index < len(body):
        following = body[index]
        kept = list(following.leading_lines)
        while kept and kept[0].comment is None:
            kept.pop(0)
        body[index] = following.with_changes(leading_lines=(*two_blank_lines, *kept))
    body.insert(index, helper)
    return module.with_changes(body=body)
