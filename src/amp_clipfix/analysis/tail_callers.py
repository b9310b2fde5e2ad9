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

Two more cuts, at every level, from the same facts:

- A caller reading's clip of the helper can be reported only with its last scaled backward
  before it and a step of that scaler after it in a later statement, with no backward of that
  scaler between (`unscaled_clip`). So a reading is first read one statement at a time from the
  one making the call (`reports_none`), and dropped as soon as every such clip met there has a
  backward before it in that statement and, after it, a step of its scaler in that statement
  or a backward of its scaler before any step in a later one (or no step to the end): it
  reports none of them. Only that statement's events can hold such a clip, unless the reading
  enters itself again, which the helper levels leave room for only where the clip is one or
  two levels below the call (`closed_to_itself`: two levels, through a call spelled with the
  function's own name, the function no value anywhere; one level: any helper, so it is read
  whole). timm's `train_one_epoch`: the clips of `_backward` meet the backward of the next
  `_backward` call first; what follows in the loop (EMA updates, logging, checkpoints) is not
  asked about. A clip with no scaled backward before it in that statement can take one only
  from the statements before it (read as the whole reading reads them, clip_tail.Tail.whole);
  they are read once a step follows the clip (with no step after it to the end, it reports
  nothing), and where they make none, the clip reports nothing either. ColossalAI's tests call
  `run_fn(...)` whose `optimizer.clip_grad_by_norm` clips and `optimizer.step()` steps with no
  scaled backward anywhere before: the rest of each caller is not read.
- A caller whose own code settles every clip of the helper it meets, with its own scaled
  backward before each and its own step of that scaler after, with no backward between
  (`closes_clips`), is not followed to its callers (callables.caller_readings `follow`): a
  caller one or two levels up meets those calls in the one statement calling it, in the same
  order and with their keys translated alike (the function's own calls are within the helper
  levels left to it), so the clip's step is in the clip's statement and nothing is reported
  there. timm's `NativeScaler.__call__` (backward, unscale, clip, step): the calls of its
  instances are no longer searched.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from amp_clipfix.analysis.clip_tail import NOTHING, ClipCapable, Found, Open, Tail, statement_of
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.order import (
    FUNCTIONS,
    HELPER_DEPTH,
    Body,
    Classify,
    Enters,
    Event,
    EventKind,
    calls_of,
    events,
    gated,
    statements,
)
from amp_clipfix.analysis.summary import called_name


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


def reports_none(
    facts: ProjectFacts,
    file: FileFacts,
    function: Body,
    call: ast.Call,
    classify: Classify,
    enters: Enters,
    capable: ClipCapable,
    clips: set[int],
) -> bool:
    """The caller reading entered at `call` reports none of the helper's clips (`clips`, the
    ids of their calls) met through it, learnt from its statements from the one making the
    call on, read one at a time only as far as that takes (see the module's docstring). Each
    statement's events are those a whole reading gives it (a Tail's, never quiet: the same
    helpers entered, from the same statements)."""
    first = statement_of(file, function, call)
    if first is None:
        return False
    listed = list(statements(function.body))
    start = next(i for i, statement in enumerate(listed) if statement is first)
    if not any(calls_of(statement) for statement in listed[start + 1 :]) and not any(
        seen is not None and seen.kind is EventKind.CLIP
        for seen in (classify(file, own) for own in calls_of(first))
    ):
        return True  # read whole, its helpers are not entered there (order.quiet_tail)
    tail = Tail(capable, classify)
    tail.first = first
    order: list[Event] = []
    before: list[list[Event]] = []  # the events before the call's statement, once asked

    def backed() -> bool:
        """A scaled backward comes before the call's statement in the whole reading (its
        statements before it, read as clip_tail.Tail.whole reads them)."""
        if not before:
            gate = gated(capable.before, enters)
            before.append(
                events(
                    facts,
                    file,
                    function,
                    classify,
                    enters=gate,
                    until=first,
                    outside=capable.outside,
                )
            )
        return any(event.kind is EventKind.BACKWARD for event in before[0])

    for index in range(start, len(listed)):
        until = listed[index + 1] if index + 1 < len(listed) else NOTHING  # never quiet
        order += events(
            facts,
            file,
            function,
            tail.classify,
            0,
            enters,
            listed[index],
            tail.start,
            until,
            outside=capable.outside,
        )
        if index == start:
            levels = [len(e.via) for e in order if id(e.call) in clips and call in e.via]
            if not levels:
                return True  # no clip of the helper through the call (nor through itself)
            if tail.cut or not closed_to_itself(capable, file, function, min(levels)):
                return False  # a helper read from its first clip: a backward may be left out
        verdict = quiet_clips(order, first, call, clips, backed)
        if verdict is not None:
            return verdict
    return True


def closed_to_itself(capable: ClipCapable, file: FileFacts, function: Body, level: int) -> bool:
    """No statement of the reading other than the call's can meet a helper clip through the
    call: that takes entering the function again, which the helper levels leave room for
    only where the clip is one or two levels below the call (`level`: the least in the call's
    statement), and then only through a call of the function itself (two levels: a call
    spelled with its name, the function no value anywhere: clip_tail.ClipCapable.escapes)."""
    if level >= HELPER_DEPTH:
        return True
    if level < HELPER_DEPTH - 1 or not isinstance(function, FUNCTIONS):
        return isinstance(function, ast.Module)  # a module's code is no callee
    if any(
        isinstance(n, ast.Call) and called_name(n.func) == function.name for n in walk(function)
    ):
        return False
    summary = capable.reach.summary_of(file.path)
    if summary is None or summary.tree is not file.tree:
        return False
    owner, cls = summary.enclosing(function)
    method = owner is None and cls is not None
    try:
        return not capable.escapes(Found(function, summary, method))
    except Open:
        return False


def quiet_clips(
    order: list[Event],
    first: ast.stmt,
    call: ast.Call,
    clips: set[int],
    backed: Callable[[], bool],
) -> bool | None:
    """True when no helper clip met through `call` can be reported, False when one may, None
    while the statements read so far do not tell. `backed`: whether a scaled backward comes
    before the call's statement (asked only of a clip with none before it in the statements
    read and a step after it)."""
    for index, event in enumerate(order):
        if event.kind is not EventKind.CLIP or id(event.call) not in clips or call not in event.via:
            continue
        backward = next((e for e in reversed(order[:index]) if e.kind is EventKind.BACKWARD), None)
        if backward is None:
            if not any(later.kind is EventKind.STEP for later in order[index + 1 :]):
                return None  # no step after it yet (none to the end: it reports nothing)
            if backed():
                return False  # its backward comes before the call's statement: read it whole
            continue  # no backward anywhere before it: it reports nothing
        for later in order[index + 1 :]:
            if later.kind is EventKind.BACKWARD and later.scaler == backward.scaler:
                break
            if later.kind is EventKind.STEP:
                if later.statement is first:
                    if later.scaler == backward.scaler:
                        break
                else:
                    return False
        else:
            return None
    return True
