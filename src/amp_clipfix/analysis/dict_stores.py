"""Statements that store into a dict a name holds: `kwargs["fused"] = True`,
`kwargs.update(fused=True)`, `kwargs.setdefault("fused", True)` (the evaluator's
with_item_assignments joins what they store into the dict's value)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk
from amp_clipfix.analysis.nodes import blocks_of
from amp_clipfix.analysis.shapes import all_params, bound_names
from amp_clipfix.analysis.values import Absent, DictV, string_of

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
Stores = dict[str, list[tuple[ast.stmt, bool]]]


def item_stores(
    scope: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    receivers: Callable[[ast.AST], set[str]] | None = None,
) -> Stores:
    """The statements of a scope's own code (every block of it, not the functions or classes
    defined in it) that may store into the dict a name holds, by that name, in source order,
    each with whether it runs whenever the name is bound: its block is the block of every
    binding of the name in the scope or a block around it (a parameter is bound in the
    scope's body). A store under a condition, in a loop or a `try` that the binding is not
    in may not run; one beside its binding in `if __name__ == "__main__":` does. A lambda
    has no statements. `receivers`: what names a statement stores into (item_receivers by
    default; sequences.list_receivers for the stores into a list)."""
    if not isinstance(scope.body, list):
        return {}
    body = scope.body
    stores: list[tuple[str, ast.stmt, tuple[int, ...]]] = []
    for statement, chain in own_statements(body):
        stored_into = (receivers or item_receivers)(statement)
        stores.extend((name, statement, chain) for name in sorted(stored_into))
    if not stores:
        return {}
    stored = {name for name, _, _ in stores}
    bindings: dict[str, list[tuple[int, ...]]] = {}  # name -> the block chains that bind it
    if not isinstance(scope, ast.Module):
        for param in all_params(scope.args):
            bindings.setdefault(param.arg, []).append((id(body),))
    for statement, chain in own_statements(body):
        for name in statement_binds(statement):
            if name in stored:
                bindings.setdefault(name, []).append(chain)
    stores.sort(key=lambda store: (store[1].lineno, store[1].col_offset))
    index: Stores = {}
    for name, statement, chain in stores:
        always = all(chain[-1] in bound for bound in bindings.get(name, [(id(body),)]))
        index.setdefault(name, []).append((statement, always))
    return index


def own_statements(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, tuple[int, ...]]]:
    """The statements of a scope's own code, each with the ids of the blocks it sits in (the
    scope's body first); not those of the functions or classes defined in it."""
    todo: list[tuple[list[ast.stmt], tuple[int, ...]]] = [(body, (id(body),))]
    while todo:
        block, chain = todo.pop()
        for statement in block:
            yield statement, chain
            if not isinstance(statement, SCOPES):
                todo.extend((inner, (*chain, id(inner))) for inner in blocks_of(statement))


def statement_binds(statement: ast.stmt) -> list[str]:
    """The names a statement binds in its scope (a `with` binds its items' targets)."""
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [name for item in statement.items for name in bound_names(item)]
    return bound_names(statement)


# The dict methods whose entries dict_method_entries reads.
STORING_METHODS = ("update", "setdefault")


def item_receivers(statement: ast.AST) -> set[str]:
    """The names whose dict `statement` may store into: `name[...] = v`, `name.update(...)`
    and `name.setdefault(...)`."""
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
            and call.func.attr in STORING_METHODS
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
        key = string_of(call.args[0])
        if key is not None:
            defaults.entries.setdefault(key, []).append(Thunk(call.args[1], ctx))
    elif call.func.attr == "update":
        pairs: list[tuple[str | None, ast.expr]] = [
            (keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg
        ]
        if call.args and isinstance(call.args[0], ast.Dict):
            pairs += [
                (string_of(key), value)
                for key, value in zip(call.args[0].keys, call.args[0].values)
                if key is not None
            ]
        for name_key, value in pairs:
            if isinstance(name_key, str):
                added.entries.setdefault(name_key, []).append(Thunk(value, ctx))


class DictStores(EvaluatorBase):
    """What the statements that store into a dict do to the values of the name holding it."""

    def item_statements(self, scope: ast.AST, name: str) -> list[tuple[ast.stmt, bool]]:
        """The statements of a scope that may store into the dict `name` holds (what
        with_item_assignments reads), each with whether it runs whenever the name is bound
        (dict_stores.item_stores); indexed once per scope, since a name is looked up there at
        every use (a module of thousands of statements)."""
        key = id(scope)
        if key not in self.item_cache:
            if isinstance(scope, ast.Module) or any(
                isinstance(node, (ast.Assign, ast.Expr)) and item_receivers(node)
                for node in self.statements(scope)  # read already for the scope's own names
            ):
                self.item_cache[key] = item_stores(scope)  # type: ignore[arg-type]
            else:
                self.item_cache[key] = {}
        return self.item_cache[key].get(name, [])

    def with_item_assignments(
        self, values: list[object], scope: ast.AST, name: str, ctx: Ctx
    ) -> list[object]:
        """`kwargs["fused"] = True` and `kwargs.update(fused=True)` set an entry of the dict
        `kwargs` holds (where they may not run: one more value it may have, and a key the dict
        did not hold may stay absent, decided at run time); `kwargs.setdefault("fused", True)`
        adds one of its possible values. On a dict not known here (a `**kwargs` no caller
        fills) they make an open dict."""
        stores = self.item_statements(scope, name)
        if not stores:  # most names read: nothing to add, no dict made
            return values
        added, joined, defaults = DictV(), DictV(), DictV()
        maybe: dict[str, ast.stmt] = {}  # keys set where the store may not run
        surely: set[str] = set()  # keys set (or defaulted) on every path
        for statement, always in stores:
            stored, defaulted = DictV(), DictV()  # what this statement sets
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == name
                        and (key := string_of(target.slice)) is not None
                    ):
                        stored.entries.setdefault(key, []).append(Thunk(statement.value, ctx))
            elif isinstance(statement, ast.Expr):
                dict_method_entries(statement.value, name, ctx, stored, defaulted)
            keys = [*stored.entries, *defaulted.entries]
            if always:
                surely.update(keys)
            else:
                maybe.update((key, statement) for key in keys if key not in maybe)
            into = added if always else joined
            for target_dict, source in ((into, stored), (defaults, defaulted)):
                for key, items in source.entries.items():
                    target_dict.entries.setdefault(key, []).extend(items)
        for key, items in joined.entries.items():
            defaults.entries[key] = [*defaults.entries.get(key, []), *items]
        if not added.entries and not defaults.entries:
            return values
        if not any(isinstance(value, DictV) for value in values):
            return [*values, DictV({**defaults.entries, **added.entries}, closed=False)]
        return [
            DictV(
                {
                    **value.entries,
                    **{  # a key the dict surely holds keeps its value
                        key: [
                            *value.entries.get(key, []),
                            *items,
                            *self.absent(value, key, maybe.get(key), surely, ctx),
                        ]
                        for key, items in defaults.entries.items()
                        if not (value.closed and key in value.entries and key not in joined.entries)
                    },
                    **{  # set on every path, then maybe set again on some
                        key: [*items, *joined.entries.get(key, [])]
                        for key, items in added.entries.items()
                    },
                },
                value.closed,
            )
            if isinstance(value, DictV)
            else value
            for value in values
        ]

    @staticmethod
    def absent(
        value: DictV, key: str, store: ast.stmt | None, surely: set[str], ctx: Ctx
    ) -> list[object]:
        """A key that a closed dict does not hold and only a store that may not run sets: the
        dict may lack it, and whether it does is decided at run time (at that store)."""
        if store is None or not value.closed or key in value.entries or key in surely:
            return []
        return [Absent(store, ctx.summary)]
