"""The callers of a clip helper's callers, at the last level ACF004 reads, asked about only
where the reading can report.

ACF004 reads a function's callers for a clip it makes with no step after it, then their callers
(callables.caller_readings, CALLER_DEPTH levels). A caller search (callers.py) finds the calls
spelled with the helper's name and asks the evaluator whether each one's callee is the helper;
on a framework whose objects come out of a registry (mmengine's `optim_wrapper`, a runner's
model) one such receiver costs thousands of evaluations.

A caller reading entered at a call reports the helper's clip only with a step of the scaler in
a statement after the one making the call (rules/acf004.py `unscaled_clip`: a step in the same
statement means the helper's own order, reported there), and order.events gives a reading's
events statement by statement in source order. So a call after whose statement the reading
makes no call at all reports nothing, whether it calls the helper or not; at the last level no
further callers are read through it, so it is not asked (`CallerIndex.callers_kept`).
`BaseModel.train_step` calls `optim_wrapper.update_params(parsed_losses)` and then
`return log_vars`: the registry behind `optim_wrapper` is not evaluated for it.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.order import FUNCTIONS, Event, EventKind, calls_of, statements


def may_step_after(call: ast.Call, caller: Ctx) -> bool:
    """A caller reading entered at `call` (its function, or its module's code) makes a call
    in a statement after the one making `call`: only then can it report a clip the call
    makes. Syntax only; True where the statement is not found."""
    reading = caller.func if caller.func is not None else caller.summary.tree
    if not isinstance(reading, (ast.Module, *FUNCTIONS)):
        return False  # a lambda's: no caller reading (callables.direct_callers)
    listed = list(statements(reading.body))
    places = {id(statement): index for index, statement in enumerate(listed)}
    node: ast.AST | None = call
    while node is not None and id(node) not in places:
        node = caller.summary.parent(node)
    if node is None:
        return True
    # A statement's own calls are events there; its blocks' statements are listed after it.
    return any(calls_of(statement) for statement in listed[places[id(node)] + 1 :])


def closes_clips(order: list[Event], clips: set[int]) -> bool:
    """A caller reading's own code settles every clip of the helper it meets (`clips`: the
    ids of their calls), so no reading of its callers can report one through it (they are
    not read: callables.caller_readings `follow`). Each such clip has a scaled backward
    before it and a step of that scaler after it, with no backward between, both calls the
    reading makes itself. A caller one or two levels up enters this function as a helper and
    meets its events in the one statement calling it, the same calls in the same order (the
    helper levels left to it include the function's own calls), its keys translated alike:
    the backward it takes for such a clip is that one, and a step of the same scaler comes
    in the clip's statement (rules/acf004.py `unscaled_clip`: no finding there)."""
    met = False
    for index, event in enumerate(order):
        if event.kind is EventKind.CLIP and id(event.call) in clips:
            met = True
            if not settled(order, index):
                return False
    return met


def settled(order: list[Event], index: int) -> bool:
    """The clip at `index` has an own scaled backward before it (the last one) and an own
    step of its scaler after it, with no backward between."""
    backward = next((e for e in reversed(order[:index]) if e.kind is EventKind.BACKWARD), None)
    if backward is None or backward.via:
        return False
    for event in order[index + 1 :]:
        if event.kind is EventKind.BACKWARD:
            return False
        if event.kind is EventKind.STEP and not event.via and event.scaler == backward.scaler:
            return True
    return False
