"""Calls of a function made through a value: the function (or a class, for its `__init__`) is
an argument of another call, and what receives it calls it.

- a project function that takes it as a parameter and calls it with its own parameters
  (`run_benchmark(fn=self.train, args=(model, loader))` with
  `def run_benchmark(fn, args): return fn(*args)`), also after handing it on to another such
  function (FORWARD_DEPTH helpers deep);
- `fabric.launch(fn, a, b)`, which calls `fn(fabric, a, b)`;
- the standard library's starters, `threading.Thread(target=fn, args=(...), kwargs={...})` and
  `multiprocessing.Process(...)`, which call `fn(*args, **kwargs)` (where each argument is:
  the starter's registry entry);
- a `functools.partial(fn, a)` of it (the evaluator's partial value) called at once, passed to
  any of the above, or stored under a name that is: its call is `fn(a, ...)`.

Each is given back as a call of the function and the context its arguments are read in (the
helper's parameters bound to the outer call's arguments), so a parameter followed to its callers
(callers.py) binds them as it binds a direct call. Every value is asked of the evaluator; a name
only chooses which calls to look at. Nothing evaluated is kept here: the indexes are syntax.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis import names
from amp_clipfix.analysis.frame import MAX_DEPTH, Ctx, EvaluatorBase, Given, Thunk
from amp_clipfix.analysis.shapes import all_params, is_method
from amp_clipfix.analysis.summary import Summary, called_name
from amp_clipfix.analysis.values import ClsV, DictV, Ext, FabricV, Fn, Opaque, Part, TupleV

# Project functions a callable may pass through (received, handed on) before one calls it.
FORWARD_DEPTH = 3
# Searches for calls through values running inside one another (an argument read on the way
# is itself a parameter followed to its callers): beyond it the search is cut, and what the
# cut made is never memoised (frame.EvaluatorBase.cuts).
MAX_NESTED = 2


class PassedCalls(EvaluatorBase):
    """The calls of a function made by whatever receives it as an argument."""

    def passed_calls(
        self, function: ast.AST, cls: ast.ClassDef | None, summary: Summary, ctx: Ctx
    ) -> list[tuple[ast.Call, Ctx]]:
        """The calls of `function` (`cls`: a class whose instantiation calls its `__init__`)
        made through the calls of `summary` that pass it as an argument."""
        wanted = wanted_name(function, cls)
        outers = summary.passing(wanted)
        if not outers:
            return []
        if self.passed_nesting >= MAX_NESTED:
            self.cuts += 1
            return []
        self.passed_nesting += 1
        try:
            found: list[tuple[ast.Call, Ctx]] = []
            for outer in outers:
                caller = self.ctx_of(summary, outer)
                if caller.depth + ctx.depth > MAX_DEPTH:
                    self.cuts += 1
                    continue
                found.extend(self.calls_through(outer, caller, function, cls, FORWARD_DEPTH))
            return [
                made for call, at in found for made in self.through_partial(call, at, function, cls)
            ]
        finally:
            self.passed_nesting -= 1

    def calls_through(
        self,
        outer: ast.Call,
        caller: Ctx,
        function: ast.AST,
        cls: ast.ClassDef | None,
        depth: int,
        accepted: frozenset[str] | None = None,
    ) -> list[tuple[ast.Call, Ctx]]:
        """The calls of `function` that `outer` makes by what it is given. Only the arguments
        written with an `accepted` name (the function's own; inside a helper, the parameters
        that hold it) and received by something that calls what it receives are evaluated:
        what the callee is comes first."""
        if accepted is None:
            accepted = frozenset({wanted_name(function, cls)})
        if not self.may_pass_any(outer, accepted, caller):
            return []  # no argument can be the function: the callee is not asked what it is
        found: list[tuple[ast.Call, Ctx]] = []
        launch = self.launch_call(outer, caller)
        if launch is not None and self.passes(launch.func, accepted, caller, function, cls):
            found.append((launch, caller))
        for callee in self.ev(outer.func, caller):
            entry = names.entry_of(callee.qname) if isinstance(callee, Ext) else None
            if entry is not None and entry.starts is not None:
                started = self.started_call(outer, entry.starts)
                if started is not None and self.passes(
                    started.func, accepted, caller, function, cls
                ):
                    found.append((started, caller))
            elif isinstance(callee, Fn) and callee.node is not function:
                found.extend(
                    self.calls_in_helper(callee, outer, caller, accepted, function, cls, depth)
                )
            elif (
                entry is not None
                and entry.kind is names.Kind.PARTIAL
                and depth > 1
                and outer.args
                and self.passes(outer.args[0], accepted, caller, function, cls)
            ):
                found.extend(self.partial_uses(outer, caller, function, cls, depth - 1))
        return found

    def partial_uses(
        self, made: ast.Call, caller: Ctx, function: ast.AST, cls: ast.ClassDef | None, depth: int
    ) -> list[tuple[ast.Call, Ctx]]:
        """The calls of the `functools.partial(function, ...)` that `made` builds, wherever
        its value goes in the module: called at once (`partial(fn, a)(b)`), an argument of a
        call (a helper, `fabric.launch`, a Thread), or stored under a name (`job = ...`,
        `self.job = ...`) that is called or passed on. Each call is of the partial: the caller
        (passed_calls) puts the partial's own arguments first (through_partial)."""
        summary = caller.summary
        parent = summary.parent(made)
        if isinstance(parent, ast.keyword):
            parent = summary.parent(parent)
        if isinstance(parent, ast.Call):
            if parent.func is made:
                return [(parent, caller)]
            return self.calls_through(parent, caller, function, cls, depth)
        targets: list[ast.expr] = []
        if isinstance(parent, ast.Assign) and parent.value is made:
            targets = parent.targets
        elif isinstance(parent, ast.AnnAssign) and parent.value is made:
            targets = [parent.target]
        stored = frozenset(name for target in targets if (name := called_name(target)))
        found: list[tuple[ast.Call, Ctx]] = []
        for name in sorted(stored):
            for call in summary.calls(name):
                at = self.ctx_of(summary, call)
                if self.is_callable(self.ev(call.func, at), function, cls):
                    found.append((call, at))
            for outer in summary.passing(name):
                at = self.ctx_of(summary, outer)
                found.extend(self.calls_through(outer, at, function, cls, depth, stored))
        return found

    def may_pass_any(self, outer: ast.Call, accepted: frozenset[str], caller: Ctx) -> bool:
        """Some argument of `outer` may be the function. Every way `outer` makes a call of it
        (a launch, a starter's target, a helper's parameter, a partial) asks `passes` of one
        of its arguments, so where none may pass, none is made, whatever the callee is: it is
        not evaluated (`scalar_dict.setdefault("step", step)` with `step` a parameter, in
        mmengine's visualizer: `scalar_dict` came from every caller of every `add_scalars`, the
        hooks that call them and the runners behind those)."""
        return any(self.may_be_passed(arg, accepted, caller) for arg in arguments(outer))

    def may_be_passed(self, arg: ast.expr, accepted: frozenset[str], caller: Ctx) -> bool:
        """`passes` short of evaluating the argument."""
        return (called_name(arg) in accepted or isinstance(arg, ast.Call)) and not (
            self.through_parameter(arg, caller)
        )

    def passes(
        self,
        arg: ast.expr,
        accepted: frozenset[str],
        caller: Ctx,
        function: ast.AST,
        cls: ast.ClassDef | None,
    ) -> bool:
        """Whether an argument is the function (by its value; the name only chooses which
        arguments to evaluate; a call, `partial(fn, a)`, is asked by its value alone)."""
        return self.may_be_passed(arg, accepted, caller) and self.is_callable(
            self.ev(arg, caller), function, cls
        )

    def calls_in_helper(
        self,
        helper: Fn,
        outer: ast.Call,
        caller: Ctx,
        accepted: frozenset[str],
        function: ast.AST,
        cls: ast.ClassDef | None,
        depth: int,
    ) -> Iterator[tuple[ast.Call, Ctx]]:
        """`helper(..., fn, ...)`: its calls of the parameter that receives `fn` (the outer
        call's arguments bound to its parameters), and those of the helpers it hands `fn` on to."""
        called, handed = self.callable_params(helper.node)
        if not called and not (handed and depth > 1):
            return
        bound = self.bind(helper.node, outer, caller, helper.bound, helper.summary)
        arguments_ = arguments(outer)
        params = frozenset(
            name
            for name in sorted(called | handed if depth > 1 else called)
            if any(
                isinstance(item, Thunk)
                and any(item.expr is arg for arg in arguments_)
                and self.passes(item.expr, accepted, caller, function, cls)
                for item in bound.get(name, ())
            )
        )
        if not params:
            return
        inner = Ctx(helper.summary, helper.node, helper.cls, bound, caller.depth + 1)
        self.keep.append(inner)
        for node in self.body(helper.node):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in params:
                if self.is_callable(self.ev(node.func, inner), function, cls):
                    yield node, inner
            elif depth > 1 and any(
                isinstance(arg, ast.Name) and arg.id in params for arg in arguments(node)
            ):
                yield from self.calls_through(node, inner, function, cls, depth - 1, params)

    def callable_params(self, function: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        """The parameters a function calls (`fn(...)`) and those it hands to a call
        (`run(fn)`), read once per function from its own body."""
        key = id(function)
        if key not in self.param_uses:
            params = {param.arg for param in all_params(function.args)}  # type: ignore[attr-defined]
            called: set[str] = set()
            handed: set[str] = set()
            for node in self.body(function):
                if not isinstance(node, ast.Call):
                    continue
                if isinstance(node.func, ast.Name) and node.func.id in params:
                    called.add(node.func.id)
                handed.update(
                    arg.id
                    for arg in arguments(node)
                    if isinstance(arg, ast.Name) and arg.id in params
                )
            self.param_uses[key] = (frozenset(called), frozenset(handed))
        return self.param_uses[key]

    def through_parameter(self, arg: ast.expr, caller: Ctx) -> bool:
        """Whether an argument reads a parameter of the function it is written in (`fn`,
        `runner.train`; not a method's `self`): that value came from the function's callers,
        and the call that passed it there is found where it is written (its name is the
        function's), then followed here through the helpers (FORWARD_DEPTH). Reading it would
        follow every caller of every such function first."""
        root = arg
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or caller.bindings is not None:
            return False  # a bound helper's parameter holds the outer call's argument
        function, summary = caller.func, caller.summary
        while function is not None:
            params = all_params(function.args)  # type: ignore[attr-defined]
            if any(param.arg == root.id for param in params):
                own = is_method(summary, function) and params[0].arg == root.id
                return not own
            if root.id in self.local_bindings(function, summary):
                return False
            function, _ = summary.enclosing(function)
        return False

    def is_callable(
        self, values: list[object], function: ast.AST, cls: ast.ClassDef | None
    ) -> bool:
        """Whether a value calls `function` when called: the function itself, a
        `functools.partial` of it, or (for an `__init__`) its class or a subclass."""
        for value in values:
            if isinstance(value, Fn) and value.node is function:
                return True
            if isinstance(value, Part) and self.is_callable(value.funcs, function, cls):
                return True
            if (
                isinstance(value, ClsV)
                and cls is not None
                and getattr(function, "name", None) == "__init__"
                and any(isinstance(base, ClsV) and base.node is cls for base in self.mro(value))
            ):
                return True
        return False

    def through_partial(
        self,
        call: ast.Call,
        caller: Ctx,
        function: ast.AST,
        cls: ast.ClassDef | None,
        depth: int = FORWARD_DEPTH,
    ) -> list[tuple[ast.Call, Ctx]]:
        """A call of `function` as written, and, where its callee is a `functools.partial`
        of it, the call the partial makes: the partial's arguments first, then the call's
        (`partial(self.train, model)(loader)` calls `self.train(model, loader)`), so the
        function's parameters are bound as for a direct call."""
        values = self.ev(call.func, caller)
        parts = [v for v in values if isinstance(v, Part) and self.is_callable([v], function, cls)]
        if not parts:
            return [(call, caller)]
        others = [v for v in values if not isinstance(v, Part)]
        found = [(call, caller)] if self.is_callable(others, function, cls) else []
        for part in parts:
            made = self.partial_call(part, call)
            if depth > 0:
                found.extend(self.through_partial(made, caller, function, cls, depth - 1))
        return found

    def partial_call(self, part: Part, call: ast.Call) -> ast.Call:
        """`call` made through `part`, as the call of the partial's function (its bound
        positional arguments as a `*` of known values, its keywords as a `**` of a dict), made
        once per partial value and call (the evaluator's memo is keyed by node)."""
        known = self.partial_calls.get((id(part), id(call)))
        if known is not None:
            return known[2]
        args: list[ast.expr] = list(call.args)
        if part.args is None or part.args:
            bound: list[object] = [
                TupleV(part.args) if part.args is not None else Opaque(part.node, part.summary)
            ]
            args.insert(0, ast.copy_location(ast.Starred(Given(bound, call), ast.Load()), call))
        keywords = list(call.keywords)
        if part.keywords:
            closed = all(k.arg is not None for k in part.node.keywords)
            spread = Given([DictV(dict(part.keywords), closed)], call)
            keywords.insert(0, ast.copy_location(ast.keyword(None, spread), call))
        made = ast.copy_location(ast.Call(Given(part.funcs, call), args, keywords), call)
        self.partial_calls[(id(part), id(call))] = (part, call, made)
        return made

    def launch_call(self, launch: ast.Call, caller: Ctx) -> ast.Call | None:
        """`fabric.launch(fn, *args)` as the call `fn(fabric, *args)` it makes (made once per
        launch call: the evaluator keys its memo by node)."""
        if not launch.args or not isinstance(launch.func, ast.Attribute):
            return None
        if launch.func.attr != names.FABRIC_LAUNCH:
            return None
        if not any(isinstance(v, FabricV) for v in self.ev(launch.func.value, caller)):
            return None
        if id(launch) not in self.launched:
            call = ast.Call(launch.args[0], [launch.func.value, *launch.args[1:]], launch.keywords)
            self.launched[id(launch)] = (launch, ast.copy_location(call, launch))
        return self.launched[id(launch)][1]

    def started_call(self, start: ast.Call, starts: tuple[names.Parameter, ...]) -> ast.Call | None:
        """`Thread(target=fn, args=(...), kwargs={...})` (and `Process`) as the call
        `fn(*args, **kwargs)` it makes, by the parameters the registry gives the starter (once
        per call, like launch_call)."""
        if id(start) not in self.launched:
            target, args_, kwargs_ = starts
            given = {
                p.name: start.args[p.position]
                for p in starts
                if p.position is not None and p.position < len(start.args)
            }
            given.update((k.arg, k.value) for k in start.keywords if k.arg is not None)
            if target.name not in given or any(k.arg is None for k in start.keywords):
                return None
            if any(isinstance(arg, ast.Starred) for arg in start.args):
                return None
            args: list[ast.expr] = []
            if args_.name in given:
                args.append(ast.Starred(given[args_.name], ast.Load()))
            kwargs = [ast.keyword(None, given[kwargs_.name])] if kwargs_.name in given else []
            call = ast.copy_location(ast.Call(given[target.name], args, kwargs), start)
            for node in (*args, *kwargs):
                ast.copy_location(node, start)
            self.launched[id(start)] = (start, call)
        return self.launched[id(start)][1]


def wanted_name(function: ast.AST, cls: ast.ClassDef | None) -> str:
    """The name a value of `function` is written with: a class's for its `__init__`."""
    name: str = function.name  # type: ignore[attr-defined]
    return cls.name if cls is not None and name == "__init__" else name


def arguments(call: ast.Call) -> list[ast.expr]:
    """A call's argument expressions, positional and keyword (a `*x` / `**x` as written)."""
    return [*call.args, *(keyword.value for keyword in call.keywords)]
