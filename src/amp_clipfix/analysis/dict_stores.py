"""Statements that store into a dict a name holds: `kwargs["fused"] = True`,
`kwargs.update(fused=True)`, `kwargs.setdefault("fused", True)` (the evaluator's
with_item_assignments joins what they store into the dict's value)."""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import Ctx, Thunk
from amp_clipfix.analysis.shapes import literal_of
from amp_clipfix.analysis.values import DictV


def item_receivers(statement: ast.AST) -> set[str]:
    """The names whose dict `statement` may store into: `name[...] = v` and `name.m(...)`."""
    if isinstance(statement, ast.Assign):
        return {
            t.value.id
            for t in statement.targets
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
        }
    if isinstance(statement, ast.Expr):
        call = statement.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
        ):
            return {call.func.value.id}
    return set()


def dict_method_entries(call: ast.expr, name: str, ctx: Ctx, added: DictV, defaults: DictV) -> None:
    """`name.update(key=v)` / `name.update({"key": v})` set entries; `name.setdefault("key",
    v)` may set one (the dict may hold the key already)."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    ):
        return
    if call.func.attr == "setdefault" and len(call.args) == 2:
        key = literal_of(call.args[0])
        if isinstance(key, str):
            defaults.entries.setdefault(key, []).append(Thunk(call.args[1], ctx))
    elif call.func.attr == "update":
        pairs: list[tuple[str | None, ast.expr]] = [
            (keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg
        ]
        if call.args and isinstance(call.args[0], ast.Dict):
            pairs += [
                (literal_of(key), value)
                for key, value in zip(call.args[0].keys, call.args[0].values)
                if key is not None
            ]
        for name_key, value in pairs:
            if isinstance(name_key, str):
                added.entries.setdefault(name_key, []).append(Thunk(value, ctx))
