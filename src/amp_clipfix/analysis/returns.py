"""What a call of a project function returns, asked once per question, not per calling
context (issue 35): the memo's key holds only what the answer depends on, and an argument
that only passes a parameter on is keyed by what that parameter is bound to."""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import (
    MAX_DEPTH,
    MAX_VALUES,
    Ctx,
    EvaluatorBase,
    Thunk,
    argument_key,
)
from amp_clipfix.analysis.nodes import child_nodes
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.values import ClsV, DictV, Fn, Opaque, TupleV, constant_of

# How deep a memo key follows what an argument holds (a dict of arguments evaluated already,
# holding dicts...): below it, by expression and context. A dict may hold itself.
KEY_DEPTH = 4


class CallReturns(EvaluatorBase):
    """The returns of project functions, memoised per question (frame.py's recall / enter /
    leave, so a value a bound or a cycle cut is kept for its question only)."""

    def returns(self, fn: Fn, call: ast.Call, ctx: Ctx) -> list[object]:
        """What a call of a project function returns. Asked once per question, not per
        calling context: the key holds only what the answer depends on (the function, its
        class and runtime receiver, the depth it is read at, and the values of the parameters
        its body reads); a call elsewhere that passes the same values reads the answer."""
        if ctx.depth >= MAX_DEPTH:
            return [Opaque(call, ctx.summary)]
        bound = self.bind(fn.node, call, ctx, fn.bound, fn.summary)
        reads = self.read_params(fn.node)
        key = (
            id(fn.node),
            id(fn.summary),
            id(fn.cls),
            None if fn.receiver is None else id(fn.receiver.node),
            ctx.depth + 1,
            tuple(
                (name, None if name not in bound else self.argument_keys(bound[name]))
                for name in reads
            ),
        )
        known = self.recall(self.returns_cache, "returns", key)
        if known is not None:
            return known or [Opaque(call, ctx.summary)]
        if self.cycle("returns", key):  # read inside its own answer: as before, anew
            return self.returned_values(fn, bound, ctx) or [Opaque(call, ctx.summary)]
        self.keep.append(bound)  # the key's ids stay those of live values
        entered = self.enter("returns", key)
        values: list[object] | None = None
        try:
            values = self.returned_values(fn, bound, ctx)
        finally:
            self.leave(entered, self.returns_cache, "returns", key, values)
        return values or [Opaque(call, ctx.summary)]

    def returned_values(self, fn: Fn, bound: dict[str, list[object]], ctx: Ctx) -> list[object]:
        inner = Ctx(fn.summary, fn.node, fn.cls, bound, ctx.depth + 1, runtime=fn.receiver)
        self.keep.append(inner)
        values: list[object] = []
        for value in self.returned_expressions(fn.node):
            values.extend(self.ev(value, inner))
        return values

    def returned_expressions(self, function: ast.AST) -> list[ast.expr]:
        """The values of a function's own `return` statements, in order (once per function)."""
        key = id(function)
        if key not in self.returns_nodes:
            self.returns_nodes[key] = [
                node.value
                for node in self.statements(function)
                if isinstance(node, ast.Return) and node.value is not None
            ]
        return self.returns_nodes[key]

    def argument_keys(self, items: list[object], depth: int = 0) -> tuple[object, ...]:
        """What a parameter is bound to, as a memo key's part: what each item is, not which
        object holds it (values.memo_key), so equal values passed from two calling contexts
        meet. A name that only passes on a parameter of the function it is written in
        (`return self.inner.f(samples)` in a wrapper) by what that parameter is bound to; a
        literal by itself; any other argument written in a bound context (a local of a call
        being followed: `conf` in NeMo's `load_config_and_state_dict`, a context made anew
        for each of its callers) by what its value depends on there (thunk_key). Nothing is
        evaluated for a key: an argument the answer never reads costs nothing."""
        keys: list[object] = []
        for item in items:
            passed = self.passed_on(item)
            found = self.item_keys(item, depth) if passed is None else self.argument_keys(passed)
            keys.extend(k for k in found if k not in keys)
        return tuple(keys)

    def item_keys(self, item: object, depth: int) -> tuple[object, ...]:
        if depth >= KEY_DEPTH:
            return (argument_key(item),)
        if isinstance(item, Thunk):
            if item.ctx.depth <= MAX_DEPTH and constant_of(item.expr)[0]:
                return (("lit", id(item.expr)),)  # what ev_node makes of it, in any context
            if item.ctx.bindings is not None:
                return (self.thunk_key(item, depth),)
            return (argument_key(item),)  # a shared context is one object already
        if isinstance(item, DictV):
            entries = tuple((k, self.argument_keys(v, depth + 1)) for k, v in item.entries.items())
            return (("dict", item.closed, entries),)
        if isinstance(item, TupleV):
            return (("tuple", tuple(self.argument_keys(v, depth + 1) for v in item.items)),)
        return (argument_key(item),)

    def thunk_key(self, item: Thunk, depth: int) -> object:
        """An expression of a bound context by what its value depends on: the expression, the
        function, module, class, depth and run-time receiver of the context, and what the
        context binds to the parameters the expression reaches (reached_params); not the
        other bindings, which differ from caller to caller."""
        ctx = item.ctx
        bindings = ctx.bindings or {}
        runtime = ctx.runtime.node if isinstance(ctx.runtime, ClsV) else None
        bound = tuple(
            (name, self.argument_keys(bindings[name], depth + 1))
            for name in self.reached_params(ctx.func, item.expr)
            if name in bindings
        )
        where = (id(ctx.func), id(ctx.summary), id(ctx.cls), ctx.depth, id(runtime))
        return ("thunk", id(item.expr), where, bound)

    def shared_key(self, node: ast.AST, ctx: Ctx) -> tuple[int, ...] | None:
        """The key under which an expression's value in a bound context (one made for one
        followed call) is shared with the other bound contexts of its function, class, module,
        depth and run-time receiver: when it reaches none of the parameters the context
        binds (reached_params), those are all its value depends on (a parameter is read only
        by name; `self` and a parameter not bound are read without the bindings). None
        otherwise, and for a context with no bindings (one object already)."""
        bindings, function = ctx.bindings, ctx.func
        if bindings is None or function is None:
            return None
        if any(name in bindings for name in self.reached_params(function, node)):  # type: ignore[arg-type]
            return None
        runtime = ctx.runtime.node if isinstance(ctx.runtime, ClsV) else None
        return (id(node), id(function), id(ctx.summary), id(ctx.cls), ctx.depth, id(runtime))

    def reached_params(self, function: ast.AST | None, expr: ast.expr) -> tuple[str, ...]:
        """The parameters of `function` an expression's value may depend on: the names it
        reads and, through the local bindings of each and the stores into it (as flow-
        insensitive `ev` reads them), the names those read, nested code included."""
        key = (id(function), id(expr))
        known = self.reach_cache.get(key)
        if known is None:
            todo, seen = list(names_in(expr)), set()
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bindings = self.local_bindings(function)
                while todo:
                    name = todo.pop()
                    if name in seen:
                        continue
                    seen.add(name)
                    stores = [s for s, _ in self.item_statements(function, name)]
                    stores += [s for s, _ in self.list_statements(function, name)]
                    for statement in [*bindings.get(name, []), *stores]:
                        todo.extend(names_in(statement))
            else:
                seen.update(todo)  # a lambda binds nothing but its parameters
            params = [] if function is None else all_params(function.args)  # type: ignore[attr-defined]
            known = self.reach_cache[key] = tuple(p.arg for p in params if p.arg in seen)
        return known

    def passed_on(self, item: object) -> list[object] | None:
        """The items a parameter is bound to when `item` is a Thunk reading just that
        parameter in a bound context (ev_name's answer there is those items, forced), else
        None."""
        if not isinstance(item, Thunk) or not isinstance(item.expr, ast.Name):
            return None
        ctx, name, function = item.ctx, item.expr.id, item.ctx.func
        if ctx.bindings is None or function is None or name not in ctx.bindings:
            return None
        if ctx.depth > MAX_DEPTH or len(ctx.bindings[name]) > MAX_VALUES:
            return None
        key = (id(function), name, ctx.cls is not None)
        passes = self.passes_cache.get(key)
        if passes is None:  # a fact of the function's code: asked at every call followed
            passes = self.passes_cache[key] = self.only_passes(function, name, ctx)
        return ctx.bindings[name] if passes else None

    def only_passes(self, function: ast.AST, name: str, ctx: Ctx) -> bool:
        """Whether the parameter `name` of `function` holds just what a call passes: no
        `self`, no binding or store of its own in the body."""
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = [*function.args.posonlyargs, *function.args.args]
            if ctx.cls is not None and positional and positional[0].arg == name:
                return False  # perhaps `self` (CallerIndex.parameter)
            if name in self.globals_declared(function) or name in self.local_bindings(
                function, ctx.summary
            ):
                return False
            # a store into it: not just the items passed
            return not (
                self.item_statements(function, name) or self.list_statements(function, name)
            )
        return isinstance(function, ast.Lambda) and name not in self.local_bindings(
            function, ctx.summary
        )

    def read_params(self, function: ast.AST) -> tuple[str, ...]:
        """The parameters a function's code reads by name (its nested code too), in order:
        what its answers may depend on."""
        key = id(function)
        if key not in self.reads_cache:
            params = [p.arg for p in all_params(function.args)]  # type: ignore[attr-defined]
            used = names_in(*function.body)  # type: ignore[attr-defined]
            self.reads_cache[key] = tuple(name for name in params if name in used)
        return self.reads_cache[key]


def names_in(*roots: ast.AST) -> set[str]:
    """The names the nodes read or bind, nested code included: `ast.walk`'s names, from a
    walk that steps over the load/store contexts (nodes.py; every function a call is
    followed into is walked once)."""
    found: set[str] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)  # a name holds no node but its context
        else:
            todo.extend(child_nodes(node))
    return found
