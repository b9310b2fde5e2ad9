"""What a call of a project function returns, asked once per question, not per calling
context (issue 35): the memo's key holds only what the answer depends on, and an argument
that only passes a parameter on is keyed by what that parameter is bound to."""

from __future__ import annotations

import ast
from pathlib import Path

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
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, DictV, Fn, Opaque, TupleV, constant_of

# What a value holds that holds no context (holds_context): code, modules, constants.
LEAVES = (ast.AST, Summary, str, bytes, int, float, complex, type(None), Path)
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
        its body reads); a call elsewhere that passes the same values reads the answer, and so
        does one that passes the same values to the parameters the answer was found to read
        (`read_answer`)."""
        if ctx.depth >= MAX_DEPTH:
            return [Opaque(call, ctx.summary)]
        bound = self.bind(fn.node, call, ctx, fn.bound, fn.summary)
        receiver = None if fn.receiver is None else id(fn.receiver.node)
        shape = (id(fn.node), id(fn.summary), id(fn.cls), receiver, ctx.depth + 1)
        parts, consulted = self.argument_parts(self.read_params(fn.node), bound)
        key = (*shape, parts)
        known = self.recall(self.returns_cache, "returns", key)
        if known is not None:
            self.note_reads(consulted, self.returns_reads.get(key))  # a cut value's: all
            return known or [Opaque(call, ctx.summary)]
        if self.cycle("returns", key):  # read inside its own answer: as before, anew
            self.note_reads(consulted, None)
            return self.returned_values(fn, bound, ctx)[0] or [Opaque(call, ctx.summary)]
        answer = self.read_answer(shape, parts)
        if answer is not None:
            self.note_reads(consulted, answer[1])
            return answer[0] or [Opaque(call, ctx.summary)]
        self.keep.append(bound)  # the key's ids stay those of live values
        entered = self.enter("returns", key)
        values: list[object] | None = None
        read: frozenset[str] | None = None
        try:
            values, read = self.returned_values(fn, bound, ctx)
        finally:
            self.leave(entered, self.returns_cache, "returns", key, values)
        self.note_reads(consulted, read)
        run = self.returns_cache.get(key) is values and ("returns", key) not in self.heads
        if read is not None and run:  # the run's answer, no cycle's head
            self.returns_reads[key] = read
            self.answers[(shape, tuple(p for p in parts if p[0] in read))] = (values, read)
            read_sets = self.answer_reads.setdefault(shape, [])
            if read not in read_sets:
                read_sets.append(read)
        return values or [Opaque(call, ctx.summary)]

    def argument_parts(
        self, reads: tuple[str, ...], bound: dict[str, list[object]]
    ) -> tuple[tuple[tuple[str, object], ...], dict[str, list[tuple[int, str]]]]:
        """The returns memo key's part for each parameter read (argument_keys), and the
        parameters of bound contexts each one looked at (passed_on, thunk_key)."""
        parts: list[tuple[str, object]] = []
        consulted: dict[str, list[tuple[int, str]]] = {}
        outer = self.consulted
        try:
            for name in reads:
                if name not in bound:
                    parts.append((name, None))
                    continue
                self.consulted = consulted[name] = []
                parts.append((name, self.argument_keys(bound[name])))
        finally:
            self.consulted = outer
        return tuple(parts), consulted

    def read_answer(
        self, shape: tuple[object, ...], parts: tuple[tuple[str, object], ...]
    ) -> tuple[list[object], frozenset[str]] | None:
        """An answer of the run for a call with other arguments whose evaluation read only
        parameters this call binds to the same values (by their keys): what the evaluation
        would find again, since nothing else of its context decides it."""
        for read in self.answer_reads.get(shape, ()):
            found = self.answers.get((shape, tuple(p for p in parts if p[0] in read)))
            if found is not None:
                return found
        return None

    def note_reads(
        self, consulted: dict[str, list[tuple[int, str]]], read: frozenset[str] | None
    ) -> None:
        """A call's answer depends on what its key looked at for the parameters the answer
        read (`read`; None: maybe any): those reads of the bound contexts being evaluated."""
        for name, looked in consulted.items():
            if read is None or name in read:
                for context, param in looked:
                    reads = self.param_reads.get(context)
                    if reads is not None:
                        reads.add(param)

    def bound_values(self, ctx: Ctx, name: str, node: ast.AST) -> list[object]:
        """The values a call's context binds to a parameter, noted as read by the call's
        answer (returned_values)."""
        reads = self.param_reads.get(id(ctx))
        if reads is not None:
            reads.add(name)
        return self.force(ctx.bindings.get(name, [Opaque(node, ctx.summary)]))  # type: ignore[union-attr]

    def returned_values(
        self, fn: Fn, bound: dict[str, list[object]], ctx: Ctx
    ) -> tuple[list[object], frozenset[str] | None]:
        """The values of a call's returns, and the parameters their evaluation read from the
        call's bindings (None when a value holds the call's context: it may read any later)."""
        inner = Ctx(fn.summary, fn.node, fn.cls, bound, ctx.depth + 1, runtime=fn.receiver)
        self.keep.append(inner)
        read = self.param_reads[id(inner)] = set()
        values: list[object] = []
        try:
            for value in self.returned_expressions(fn.node):
                values.extend(self.ev(value, inner))
        finally:
            del self.param_reads[id(inner)]
        return values, None if holds_context(values, inner) else frozenset(read)

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
        other bindings, which differ from caller to caller. Made once per expression, context
        and depth (a context's bindings are made with it, never changed after), with the
        parameters it looked at noted again at each use: every followed call of a wrapper
        chain keys the same arguments again (peft: 779 keys asked 1,038,072 times)."""
        memo = (id(item.expr), id(item.ctx), depth)
        known = self.thunk_keys.get(memo)
        if known is not None and known[0] is item.ctx and known[1] is item.expr:
            if self.consulted is not None:
                self.consulted.extend(known[3])  # type: ignore[arg-type]
            return known[2]
        outer = self.consulted
        looked: list[tuple[int, str]] = []
        self.consulted = looked
        try:
            key = self.made_thunk_key(item, depth)
        finally:
            self.consulted = outer
        if outer is not None:
            outer.extend(looked)
        self.thunk_keys[memo] = (item.ctx, item.expr, key, tuple(looked))
        return key

    def made_thunk_key(self, item: Thunk, depth: int) -> object:
        ctx = item.ctx
        bindings = ctx.bindings or {}
        runtime = ctx.runtime.node if isinstance(ctx.runtime, ClsV) else None
        reached = [name for name in self.reached_params(ctx.func, item.expr) if name in bindings]
        if self.consulted is not None:
            self.consulted.extend((id(ctx), name) for name in reached)
        bound = tuple((name, self.argument_keys(bindings[name], depth + 1)) for name in reached)
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
            names = names_in(expr)
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seen: set[str] = set()
                for name in names:
                    seen.update(self.name_reach(function, name))
            else:
                seen = names  # a lambda binds nothing but its parameters
            params = [] if function is None else all_params(function.args)  # type: ignore[attr-defined]
            known = self.reach_cache[key] = tuple(p.arg for p in params if p.arg in seen)
        return known

    def name_reach(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
    ) -> frozenset[str]:
        """The parameters a name of `function` reaches (reached_params of that name), once per
        function and name: a walk per expression from each of its names through the local
        bindings cost mmengine and the Lightning tree a walk of a long function per node."""
        key = (id(function), name)
        known = self.name_reach_cache.get(key)
        if known is None:
            params = {p.arg for p in all_params(function.args)}
            todo, seen = [name], set()
            while todo:
                read = todo.pop()
                if read not in seen:
                    seen.add(read)
                    todo.extend(self.names_stored(function, read))
            known = self.name_reach_cache[key] = frozenset(n for n in seen if n in params)
        return known

    def names_stored(self, function: ast.AST, name: str) -> set[str]:
        """The names read by the local bindings of `name` and the stores into it (as flow-
        insensitive `ev` reads them), nested code included."""
        key = (id(function), name)
        known = self.stored_names.get(key)
        if known is None:
            stores = [s for s, _ in self.item_statements(function, name)]
            stores += [s for s, _ in self.list_statements(function, name)]
            statements = [*self.local_bindings(function).get(name, []), *stores]
            known = self.stored_names[key] = names_in(*statements)
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
        if not passes:
            return None
        if self.consulted is not None:
            self.consulted.append((id(ctx), name))
        return ctx.bindings[name]

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


def holds_context(values: list[object], ctx: Ctx) -> bool:
    """Whether `values` hold `ctx` (a Thunk, a lambda, an instance made in it, a dict or
    tuple of those, a context of a call made in it whose arguments do...): then evaluating
    them later may read its bindings."""
    seen: set[int] = set()
    todo: list[object] = list(values)
    while todo:
        item = todo.pop()
        if item is ctx:
            return True
        if id(item) in seen or isinstance(item, LEAVES):
            continue
        seen.add(id(item))
        if isinstance(item, (list, tuple, set, frozenset)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
        else:  # a context too: its bindings and its run-time receiver may hold `ctx`'s
            slots = getattr(type(item), "__slots__", ())
            todo.extend(getattr(item, name, None) for name in slots)
            todo.extend(getattr(item, "__dict__", {}).values())
    return False
