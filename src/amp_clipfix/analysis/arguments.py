"""A call's arguments against a function's parameters: what the call binds to each (`bind`,
for the caller search and the return values of a call), and whether it can bind them at all
(`binds_nothing`; `super_init_binds_nothing` for a base's `__init__` run by `super()`).

A caller search (callers.py) finds the calls written with a function's name and asks the
evaluator whether each one's callee may be the function; a method's name is often shared with
a library's (`loss.backward(inputs=x)` beside a project's `backward(self, loss, optimizer)`),
and the receiver's values may cost thousands of evaluations, followed through its own callers.
When the call passes a keyword the function has no parameter for (a positional-only one
included) and it has no `**` parameter, or more positional arguments than all its positional
parameters (`self` counted, as an unbound `Class.method(obj, ...)` passes it) and no `*`
parameter, Python raises `TypeError` before the function's body runs: the call binds none of
its parameters and runs none of its code, whatever its callee is. Through a `functools.partial`
of the function too (passed.py `through_partial`): a partial adds arguments, never takes the
call's away. Syntax only: the callee is not asked for. Not applied to a decorated function (the
decorator's wrapper takes the call's arguments, and may take any) nor to an `__init__` (its
instantiations: a metaclass's `__call__` or a `__new__` may take what they pass).
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk, UniqueAdds, add_unique
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import DictV, Opaque, TupleV


def binds_nothing(call: ast.Call, function: ast.AST) -> bool:
    """The call passes `function` an argument it has no parameter for (see the module's
    docstring): calling it raises before its body runs."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if function.decorator_list or function.name == "__init__":
        return False
    args = function.args
    if args.kwarg is None:
        names = {a.arg for a in (*args.args, *args.kwonlyargs)}  # not the positional-only
        if any(k.arg is not None and k.arg not in names for k in call.keywords):
            return True
    if args.vararg is None:
        given = 0
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                break
            given += 1
        if given > len(args.posonlyargs) + len(args.args):
            return True
    return False


def super_init_binds_nothing(call: ast.Call, function: ast.AST, method: ast.AST | None) -> bool:
    """`super().__init__(...)` written in `method`, an instance method of the class, runs a
    base's `__init__` (`function`) with exactly the arguments it writes and `self` from
    `super()`: no metaclass, `__new__` or partial stands between them. A keyword `function`
    has no parameter for (and no `**`), more positional arguments than it takes (and no `*`),
    or a parameter without a default that the call leaves unfilled (spreading nothing) raises
    `TypeError` before its body runs: not a call of it. (A plain call is not tested for a
    missing argument: `functools.partial` may add it, passed.py.)"""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if not binds_self(call, method):
        return False  # `self` may be among the written arguments: nothing is refused
    if function.decorator_list:
        return False  # the decorator's wrapper takes the call's arguments, and may take any
    args = function.args
    written = {k.arg for k in call.keywords if k.arg is not None}
    if args.kwarg is None and written - {a.arg for a in (*args.args, *args.kwonlyargs)}:
        return True
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return False  # a spread of unknown length may fill any parameter
    if any(k.arg is None for k in call.keywords):
        return False  # so may a `**` spread
    given = len(call.args)
    positional = [*args.posonlyargs, *args.args]  # the first is `self`, given by super()
    if args.vararg is None and given > len(positional) - 1:
        return True
    first_default = len(positional) - len(args.defaults)
    required = [p for i, p in enumerate(positional) if 1 + given <= i < first_default]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    return any(param.arg not in written for param in required)


# Methods Python makes class or static methods by their name: `super()` there gives no `self`.
IMPLICIT_CLASS_METHODS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})


def binds_self(call: ast.Call, method: ast.AST | None) -> bool:
    """Whether `super()` in the call's callee gives the base's method `self` (an instance):
    `super()` or `super(C, self)` in an undecorated instance method (in a classmethod, a
    `__new__` or with another object, the method may be unbound and `self` written)."""
    if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if method.decorator_list or method.name in IMPLICIT_CLASS_METHODS:
        return False
    positional = [*method.args.posonlyargs, *method.args.args]
    made = call.func.value  # type: ignore[attr-defined]
    if not positional or not isinstance(made, ast.Call) or made.keywords:
        return False
    if not made.args:
        return True
    second = made.args[1] if len(made.args) == 2 else None
    return isinstance(second, ast.Name) and second.id == positional[0].arg


class CallArguments(EvaluatorBase):
    """The values a call gives a function's parameters."""

    def default_of(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> ast.expr | None:
        args: ast.arguments = function.args  # type: ignore[attr-defined]
        positional = [*args.posonlyargs, *args.args]
        if param in positional:
            index = positional.index(param) - (len(positional) - len(args.defaults))
            return args.defaults[index] if index >= 0 else None
        if param in args.kwonlyargs:
            return args.kw_defaults[args.kwonlyargs.index(param)]
        return None

    def bind(
        self, function: ast.AST, call: ast.Call, caller: Ctx, is_method: bool, owner: Summary
    ) -> dict[str, list[object]]:
        """The values a call gives the parameters of `function` (defaults for the rest)."""
        args: ast.arguments = function.args  # type: ignore[attr-defined]
        positional = [*args.posonlyargs, *args.args]
        if is_method and positional:
            positional = positional[1:]
        names_ = {p.arg for p in (*positional, *args.kwonlyargs)}
        bound: dict[str, list[object]] = {}
        extra = DictV()
        rest: list[list[object]] | None = []  # what `*args` collects; None: not known here
        positions = self.positional_items(call, caller)
        if positions is None:  # a `*x` of no known length: its parameters decided at run time
            starred = next(i for i, a in enumerate(call.args) if isinstance(a, ast.Starred))
            positions = [[Thunk(arg, caller)] for arg in call.args[:starred]]
            for param in positional[starred:]:
                bound[param.arg] = [Opaque(call.args[starred], caller.summary)]
            rest = None
        for index, item in enumerate(positions):
            if index < len(positional):
                bound[positional[index].arg] = item
            elif rest is not None:
                rest.append(item)
        for keyword in call.keywords:
            if keyword.arg is None:
                spread = self.ev(keyword.value, caller)
                adds = UniqueAdds()
                for value in spread:
                    if not isinstance(value, DictV):
                        continue
                    for key, items in value.entries.items():
                        if key in names_:
                            adds.add(bound.setdefault(key, []), items)
                        else:
                            adds.add(extra.entries.setdefault(key, []), items)
                if not all(isinstance(value, DictV) and value.closed for value in spread):
                    extra.closed = False
            elif keyword.arg in names_:
                bound[keyword.arg] = [Thunk(keyword.value, caller)]
            else:
                extra.entries[keyword.arg] = [Thunk(keyword.value, caller)]
        for param in (*positional, *args.kwonlyargs):
            if param.arg not in bound:
                default = self.default_of(function, param, caller)
                if default is not None:
                    defining = self.ctx_of(owner, function)
                    bound[param.arg] = [Thunk(default, defining)]
                elif not extra.closed:
                    bound[param.arg] = [Opaque(call, caller.summary)]
        if args.kwarg is not None:
            bound[args.kwarg.arg] = [extra]
        if args.vararg is not None:
            unknown = Opaque(call, caller.summary)
            bound[args.vararg.arg] = [unknown if rest is None else TupleV(rest)]
        return bound

    def positional_items(self, call: ast.Call, caller: Ctx) -> list[list[object]] | None:
        """The values of a call's positional arguments, one list per position: a `*x` spreads
        a tuple or list of known length (`fn(*args)` where `args` holds `(model, loader)`);
        None when one spreads something else."""
        items: list[list[object]] = []
        for arg in call.args:
            if not isinstance(arg, ast.Starred):
                items.append([Thunk(arg, caller)])
                continue
            values = self.ev(arg.value, caller)
            tuples = [value for value in values if isinstance(value, TupleV)]
            lengths = {len(value.items) for value in tuples}
            if not values or len(tuples) < len(values) or len(lengths) != 1:
                return None
            spread: list[list[object]] = [[] for _ in range(lengths.pop())]
            for value in tuples:
                for position, item in enumerate(value.items):
                    add_unique(spread[position], item)
            items.extend(spread)
        return items
