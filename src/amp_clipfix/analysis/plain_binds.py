"""What a call gives the parameters of a plain function, bound once per call and kept.

`bind` gives each parameter the values a call passes it. For a function with no `*args` and no
`**kwargs`, called with no `*x` and no `**x`, that is only the call's arguments and the
function's defaults, unevaluated (Thunks: an expression and its context), so every binding of
the same call in the same context is the same. The caller questions bind each of a function's
calls once per parameter asked, and again at each pass over a cycle (speechbrain: 18,715 binds
of 635 calls); this one is made once. The askers only read it (`CallerIndex.
parameter_from_callers`, passon.expand); any other binding (a spread evaluates values that a
cycle may still be settling) is made anew each time, as before.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import Ctx, EvaluatorBase
from amp_clipfix.analysis.summary import Summary


def bound_once(
    ev: EvaluatorBase,
    function: ast.AST,
    call: ast.Call,
    caller: Ctx,
    is_method: bool,
    owner: Summary,
) -> dict[str, list[object]]:
    """`ev.bind(...)`, kept per call where only arguments and defaults make it (`plain`).
    Read it, never change it."""
    if not plain(function, call):
        return ev.bind(function, call, caller, is_method, owner)
    key = (id(function), id(call), id(caller), is_method, id(owner))
    known = ev.plain_binds.get(key)
    if known is None:
        bound = ev.bind(function, call, caller, is_method, owner)
        # the nodes and the context kept with it: their ids stay theirs
        known = ev.plain_binds[key] = (function, call, caller, owner, bound)
    return known[-1]


def plain(function: ast.AST, call: ast.Call) -> bool:
    """No `*args` / `**kwargs` to collect into, no `*x` / `**x` to spread: what the call binds
    is its arguments and the defaults, nothing evaluated."""
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    return (
        args.vararg is None
        and args.kwarg is None
        and not any(isinstance(argument, ast.Starred) for argument in call.args)
        and all(keyword.arg is not None for keyword in call.keywords)
    )
