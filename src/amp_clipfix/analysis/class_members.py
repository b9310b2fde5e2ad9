"""What a class's methods do to their first parameter, read without keeping their bodies.

A class asked for an attribute looks at every method for `self.<attr> = ...` and
`self.<attr>.append(...)`; in a large model class most methods do neither with the attribute
asked. Which attributes a method assigns or adds to is a fact of names: it is read from the
body as `bodies.peek` gives it (an unread body stays unread and is let go at the next stage),
and only the methods that name the attribute are read for good for their statements
(classes.py `self_assignments`, sequences.py `attribute_list_stores`).
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.bodies import Function, peek
from amp_clipfix.analysis.shapes import attribute_targets, first_param, own_statements

# List methods that add elements to the list a name holds.
ADDING = ("append", "extend", "insert")


def peeked_statements(method: Function) -> list[ast.AST]:
    """`own_statements(method)` from its body as `peek` gives it (not read for good): for a
    fact of names only, none of these nodes may be kept."""
    return own_statements(ast.Module(body=peek(method), type_ignores=[]))


def self_assigned_names(method: Function) -> list[str]:
    """The attributes a method assigns on its first parameter: `self_assignments`' keys."""
    return list(assignments_to(first_param(method), peeked_statements(method)))


def list_stored_names(method: Function) -> list[str]:
    """The attributes whose list a method adds to: `attribute_list_stores`' keys."""
    return list(list_stores_to(first_param(method), peeked_statements(method)))


def assignments_to(self_name: str | None, statements: list[ast.AST]) -> dict[str, list[ast.AST]]:
    """The statements among `statements` that assign `<self_name>.<attr>`, by attr."""
    found: dict[str, list[ast.AST]] = {}
    for node in statements:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for target in targets:
            for element, _ in attribute_targets(target):
                if isinstance(element.value, ast.Name) and element.value.id == self_name:
                    found.setdefault(element.attr, []).append(node)
    return found


def list_stores_to(self_name: str | None, statements: list[ast.AST]) -> dict[str, list[ast.stmt]]:
    """The statements among `statements` that add to a list `<self_name>.<attr>`, by attr."""
    found: dict[str, list[ast.stmt]] = {}
    for node in statements:
        if not isinstance(node, (ast.AugAssign, ast.Expr)):  # both statements
            continue
        receiver = list_receiver(node)
        if (
            isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == self_name
        ):
            found.setdefault(receiver.attr, []).append(node)
    return found


def list_receiver(statement: ast.AST) -> ast.expr | None:
    """What `statement` may add elements to: `x.append(...)`, `x.extend(...)`,
    `x.insert(...)`, `x += ...` (a name or an attribute)."""
    if isinstance(statement, ast.AugAssign):
        return statement.target if isinstance(statement.op, ast.Add) else None
    if isinstance(statement, ast.Expr):
        call = statement.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ADDING
        ):
            return call.func.value
    return None
