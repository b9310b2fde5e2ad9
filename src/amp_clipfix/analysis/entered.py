"""A helper a reading enters is read with the arguments of the call that enters it.

A reading in run order (order.events) enters the project functions its calls run, a few levels
down, and asks what each of their own calls runs (callables.callees). Asked in the helper's own
context, a parameter's value is every value any call of the helper in the project gives it
(callers.py): ColossalAI's test readings enter `Booster.backward(loss, optimizer)`, whose
`optimizer.backward(loss)` was resolved through every `booster.backward(...)` of every test
(each plugin's `configure` evaluated per caller: 13,278 evaluations), and the `loss.backward()`
of each optimizer wrapper entered from there through all of theirs (20,414). Yet the reading
runs the helper only through its own call: the values that call gives are the ones the helper
runs with there. So a helper entered through a call is read in a context that binds its
parameters to that call's arguments (evaluated where the call is written: the reading's own
context, or the context its own helper was entered with), as the evaluator follows a call for
its return values (returns.py); `self` is the class the call's receiver holds where the
evaluator knows it (the `Fn`'s receiver: a subclass's override is met), a parameter the call
leaves to its default, the module's and the class's names read as in the helper's own context.

One context per (helper, call, caller's context), kept for the run: each reading that enters
the helper through that call shares its answers (a tail reading and the whole one, the callers'
readings of one helper). The depth is the caller's: the levels a reading enters are bounded by
order.HELPER_DEPTH, and the evaluation inside has as many levels left as in the helper's own
context.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import Ctx, EvaluatorBase
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Fn


def entered_context(evaluator: EvaluatorBase, fn: Fn, call: ast.Call, caller: Ctx) -> Ctx:
    """The context `fn` runs in when `call`, evaluated in `caller`, enters it: its parameters
    bound to the call's arguments (once per helper, call and caller's context)."""
    receiver = None if fn.receiver is None else fn.receiver.node
    key = (id(fn.node), id(fn.summary), id(fn.cls), fn.bound, id(receiver), id(call), id(caller))
    known = evaluator.entered.get(key)
    if known is not None:
        return known[0]
    bound = evaluator.bind(fn.node, call, caller, fn.bound, fn.summary)
    ctx = Ctx(fn.summary, fn.node, fn.cls, bound, caller.depth, runtime=fn.receiver)
    evaluator.entered[key] = (ctx, fn, call, caller)  # the key's objects kept alive with it
    return ctx


def calling_context(
    evaluator: EvaluatorBase,
    summary: Summary,
    function: ast.AST | None,
    call: ast.Call,
    ctx: Ctx | None,
) -> Ctx:
    """The context a call of the function read is evaluated in: the one the function was
    entered with (`ctx`, a helper's), else the function's own."""
    if ctx is not None and ctx.func is function:
        return ctx
    return evaluator.ctx_of(summary, call)
