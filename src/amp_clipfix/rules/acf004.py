"""ACF004: plain torch clips gradients that a GradScaler scaled, with no `unscale_` first.

A rule with its own search and fix (CONTRIBUTING.md, "Adding a rule with its own search and
fixes"): it reads the order of backward, clip and step in each function and the helpers it
calls, knows the GradScaler by what made it, and inserts `scaler.unscale_(optimizer)` once per
optimizer the clip covers.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from amp_clipfix.analysis.callables import Step, caller_readings, free_code, shared_level
from amp_clipfix.analysis.clip_tail import ClipCapable, Tail, step_after_clip, tail_events
from amp_clipfix.analysis.clip_values import spelled
from amp_clipfix.analysis.event_capable import AnyEvent, BeforeClip, made_by
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import entry_of
from amp_clipfix.analysis.order import (
    FUNCTIONS,
    Body,
    Classify,
    Enters,
    Event,
    EventKind,
    Seen,
    calls_of,
    events,
    functions,
    gated,
    statement_line_is_own,
    statements,
)
from amp_clipfix.analysis.reach import CallReach
from amp_clipfix.analysis.scaler_backwards import any_scaler_backward, scaled_backward_modules
from amp_clipfix.analysis.scaler_calls import ScalerCalls
from amp_clipfix.analysis.tail_callers import closes_clips, may_step_after, reports_none
from amp_clipfix.analysis.training import call_site, is_scaler, is_torch_clip, scaler_makers
from amp_clipfix.analysis.values import Lit
from amp_clipfix.analysis.written_events import scaler_written
from amp_clipfix.models import Confidence, LightningPath, SiteKind, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix

CODE = "ACF004"

MESSAGE = (
    "Gradients scaled by a GradScaler are clipped before `scaler.unscale_(optimizer)`: the clip "
    "bounds the scaled gradients, so the step sees max_norm / scale"
)

FIX = (
    "inserts `scaler.unscale_(optimizer)` right before the clip, once for each optimizer the "
    "scaler steps after it, as torch's AMP recipe does; the scaler's step then uses the "
    "unscaled gradients and still skips a step whose gradients overflowed"
)

INSIDE = (
    "the backward and the clip run in one helper (a method, a callable object's __call__) that "
    "does not see the optimizer its caller steps: pass the optimizer in and call "
    "scaler.unscale_(optimizer) there by hand, right before the clip"
)

WHY = (
    "`scaler.scale(loss).backward()` leaves every gradient multiplied by the loss scale (65536 "
    "at first, often thousands later). `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_` "
    "read those gradients as they are: with a scale of 4096 and `max_norm=1.0` the gradients "
    "that reach the step have norm 1 / 4096 = 2.4e-4, and training crawls or stalls with no "
    "error. torch's AMP recipe calls `scaler.unscale_(optimizer)` before clipping; "
    "`scaler.step(optimizer)` then knows the gradients are unscaled. `unscale_` may run once per "
    "optimizer between two `scaler.update()` calls: a second call raises "
    "`RuntimeError: unscale_() has already been called on this optimizer since the last "
    "update()`."
)

BEFORE = """\
import torch

model = torch.nn.Linear(32, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")

for batch in torch.randn(10, 8, 32, device="cuda"):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch).square().mean()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
"""

AFTER = BEFORE.replace(
    "    torch.nn.utils.clip_grad_norm_",
    "    scaler.unscale_(optimizer)\n    torch.nn.utils.clip_grad_norm_",
)


def made_once(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> ast.Call | None:
    """The one `GradScaler(...)` call the scaler expression holds the value of, when there is
    one: the same scaler however it is reached (`scaler` and `wrapper.scaler`, given it at its
    construction), where that call runs once for the function read (same_scaler)."""
    made = {id(call): call for call, _ in scaler_makers(facts, file, node)}
    return next(iter(made.values())) if len(made) == 1 else None


def classifier(  # noqa: ANN201 - an order.Classify
    facts: ProjectFacts,
    enters: Enters = None,
    clips: Callable[[ast.Call], bool] | None = None,
    scalers: ScalerCalls | None = None,
):
    """Scaled backward, unscale_, step of a GradScaler, and torch's clip calls (asked only of
    a call that `clips` says may be torch's clip and `enters` says may run project code or
    torch's clip: analysis/reach.py, clip_values.py; a scaler only of the calls `scalers`
    says may make one: analysis/scaler_calls.py)."""

    def classify(file: FileFacts, call: ast.Call) -> Seen | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            # `<x>.scale(...).backward(...)`: the shape the gate asks of (scaler_backwards.py)
            scaled = scaler_written(call)
            if scaled is not None and is_scaler(facts, file, scaled, scalers):
                made = made_once(facts, file, scaled)
                return Seen(EventKind.BACKWARD, scaler=scaled, detail=made)
            if (
                func.attr in ("unscale_", "step")
                and call.args
                and is_scaler(facts, file, receiver, scalers)
            ):
                kind = EventKind.UNSCALE if func.attr == "unscale_" else EventKind.STEP
                made = made_once(facts, file, receiver)
                return Seen(kind, scaler=receiver, optimizer=call.args[0], detail=made)
        if (
            (clips is None or clips(call))
            and (enters is None or enters(file, None, call))
            and is_torch_clip(facts, file, call)
        ):
            return Seen(EventKind.CLIP)
        return None

    return classify


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    scalers = ScalerCalls(facts.evaluator)
    if not any_scaler_backward(facts.evaluator, scalers):
        return  # no `<x>.scale(...).backward(...)` whose x may be a GradScaler (scaler_backwards)
    reach = CallReach(facts)
    clips = ClipCapable(reach)
    before = BeforeClip(reach)
    clips.before = before.may_enter
    clips.outside = scaled_backward_modules(facts.evaluator)  # helper modules with no word
    classify = classifier(facts, reach.may_run_project, reach.may_be_clip, scalers)
    # a call is entered only where it may run a helper that makes an event (event_capable.py)
    enters = gated(AnyEvent(reach, clips, scalers).may_enter, reach.may_run_project)
    seen: set[tuple[int, int]] = set()  # (clip call, statement fixed) already reported
    for file in facts.with_words(b"clip_grad_norm_", b"clip_grad_value_"):
        for function in functions(file):
            text = file.code(function).encode()
            if b"scale" not in text and not (
                isinstance(function, FUNCTIONS) and b"clip_grad_" in text
            ):
                continue
            first = clips.first_clip(file, function)
            if first is None:
                continue  # no statement can clip, itself or in a helper (analysis/clip_tail.py)
            if not before.may_meet_backward(file, function) and not own_clips(
                file, function, classify, reach
            ):
                continue  # no backward in its reading, no clip of its own for its callers
            tail = Tail(clips, classify)
            order = tail.events(facts, file, function, first, enters)
            callers = []
            if isinstance(function, FUNCTIONS):
                # a clip of its own that meets no step here: read where it is called
                callers = in_callers(facts, file, function, order, classify, reach, clips, enters)
            if step_after_clip(order):  # then the whole function: the backward before
                order = tail.whole(order, facts, file, function, classify, enters)
            else:
                order = []  # no clip has a step after it: none is reported here
            readings = [(file, order, index) for index in range(len(order))] + callers
            for where, reading, index in readings:
                clip = reading[index]
                if clip.kind is EventKind.CLIP:
                    found = unscaled_clip(facts, where, reading, index)
                    if found is not None and (id(clip.call), id(clip.statement)) not in seen:
                        seen.add((id(clip.call), id(clip.statement)))
                        yield found


def own_clips(file: FileFacts, function: Body, classify: Classify, reach: CallReach) -> bool:
    """Some call `function` makes itself is torch's clip, as the classifier says: only those
    are read in its callers (`in_callers`). Asked only of the calls spelled as one (the
    summary's index of calls by name), unless the clip is handed on (then of every call)."""
    if reach.clip_escapes() and reach.stored is None:
        calls = [call for statement in statements(function.body) for call in calls_of(statement)]
    else:
        summary = file.summary
        calls = [
            call
            for name in sorted(reach.clips)
            for call in summary.calls(name)
            if spelled(call, reach.clips) and made_by(summary, function, call)
        ]
    for call in calls:
        seen = classify(file, call)
        if seen is not None and seen.kind is EventKind.CLIP:
            return True
    return False


def in_callers(
    facts: ProjectFacts,
    file: FileFacts,
    function: Body,
    order: list[Event],
    classify: Classify,
    reach: CallReach | None = None,
    capable: ClipCapable | None = None,
    gate: Enters = None,
) -> list[tuple[FileFacts, list[Event], int]]:
    """The clips `function` makes itself with no step of their scaler after them there, read
    in the function's callers (any module; callables.caller_readings): a clip helper imported
    from another module, a wrapper class's `clip` method, a helper that runs the backward and
    the clip and leaves the step to its caller. `gate`: the calls the readings may enter
    (else every call `reach` says may run project code)."""
    clips = [
        e
        for i, e in enumerate(order)
        if e.kind is EventKind.CLIP
        and not e.via
        and not any(s.kind is EventKind.STEP for s in order[i + 1 :])
    ]
    if not clips:
        return []
    found: list[tuple[FileFacts, list[Event], int]] = []
    enters = gate if gate is not None or reach is None else reach.may_run_project
    holds = None if reach is None else reach.may_hold_instance
    ids = {id(clip.call) for clip in clips}
    closed: set[int] = set()  # calls whose reading settles every clip: not read through
    # the last level: only the calls after which the caller reads a call (analysis/tail_callers.py)
    for where, reading, call in caller_readings(
        facts,
        file,
        function,
        holds=holds,
        last=may_step_after,
        follow=lambda call: id(call) not in closed,
    ):
        if capable is None:
            caller_order = events(facts, where, reading, classify, enters=enters, tail=True)
        elif reports_none(facts, where, reading, call, classify, enters, capable, ids):
            continue
        else:  # from where a clip can be (analysis/clip_tail.py)
            caller_order = tail_events(facts, where, reading, call, classify, enters, capable)
        if closes_clips(caller_order, ids):
            closed.add(id(call))
        for index, event in enumerate(caller_order):
            if any(event.call is clip.call for clip in clips) and call in event.via:
                found.append((where, caller_order, index))
    return found


def unscaled_clip(
    facts: ProjectFacts, file: FileFacts, order: list[Event], index: int
) -> Found | None:
    """A finding when a scaled backward comes before the clip and the scaler steps optimizers
    after it that were not unscaled before it."""
    clip = order[index]
    backwards = [e for e in order[:index] if e.kind is EventKind.BACKWARD]
    if not backwards:
        return None
    backward = backwards[-1]
    scaler = backward.scaler
    start = order.index(backward)
    steps: list[Event] = []
    same = same_scaler(file, clip, backward)
    for event in order[index + 1 :]:
        if event.kind is EventKind.BACKWARD and same(event):
            break
        if event.kind is EventKind.STEP and same(event):
            steps.append(event)
    if not steps or clip.statement in {s.statement for s in steps}:
        return None  # not this function's order: a helper that does all of it reports it
    inside = None  # the backward and the clip run in one helper: the fix goes in it
    if clip.statement is backward.statement:
        inside = shared_level(backward, clip)
        if inside is None:
            return None
    unscaled = {e.optimizer for e in order[start:index] if e.kind is EventKind.UNSCALE and same(e)}
    missing = list({s.optimizer: s for s in steps if s.optimizer not in unscaled}.values())
    if not missing:
        return None
    sites = (
        call_site(backward, SiteKind.BACKWARD),
        call_site(clip, SiteKind.GRAD_CLIP),
        *(call_site(step, SiteKind.OPTIMIZER_STEP) for step in steps),
    )
    enabled = scaler_enabled(facts, file, backward)
    if enabled is False:
        return None
    later = {e.optimizer for e in order[index + 1 :] if e.kind is EventKind.UNSCALE and same(e)}
    fixes: tuple[RuleFix, ...] = ()
    codes = [(backward.scaler_code, step.optimizer_code) for step in missing]
    anchor = first_clip(order, start, index, scaler)
    at = file
    if inside is not None:
        codes, anchor, at = inside_codes(facts, file, clip, inside, codes)
    if (
        not later & {s.optimizer for s in missing}
        and all(a and b for a, b in codes)
        and statement_line_is_own(at, anchor.statement)
    ):
        edits = tuple(
            at.insert_before(anchor.statement, f"{scaler_code}.unscale_({optimizer_code})")
            for scaler_code, optimizer_code in codes
        )
        fixes = (RuleFix(Strategy.UNSCALE, edits, safe=True, safety=FIX, targets=(sites[1],)),)
    unfixed = INSIDE if inside is not None and not fixes else None
    if enabled is None:
        return Found(
            sites,
            Confidence.REVIEW,
            review="whether the GradScaler is enabled is decided at run time",
            fixes=fixes,
            condition="the GradScaler is enabled",
            unfixed=unfixed,
        )
    return Found(sites, fixes=fixes, unfixed=unfixed)


def same_scaler(file: FileFacts, clip: Event, backward: Event) -> Callable[[Event], bool]:
    """Whether an event's scaler is the backward's: the same expression (its structural key),
    or the value of the same `GradScaler(...)` call made in the function read, outside any
    loop (it runs once per call of that function: one scaler, however it is reached)."""
    made = backward.detail if isinstance(backward.detail, ast.Call) else None
    reading = file.summary.enclosing(clip.statement)[0] or file.tree
    once = made is not None and backward.file.tree is file.tree and runs_once(file, made, reading)

    def same(event: Event) -> bool:
        return event.scaler == backward.scaler or (once and event.detail is made)

    return same


def runs_once(file: FileFacts, node: ast.AST, reading: ast.AST) -> bool:
    """`node` is written in `reading` itself (not a function inside it), outside loops."""
    current = file.summary.parent(node)
    while current is not None and current is not reading:
        if isinstance(current, (ast.For, ast.AsyncFor, ast.While, *FUNCTIONS, ast.Lambda)):
            return False
        current = file.summary.parent(current)
    return current is reading


def inside_codes(
    facts: ProjectFacts,
    file: FileFacts,
    clip: Event,
    inside: tuple[Step, Step],
    codes: list[tuple[str | None, str | None]],
) -> tuple[list[tuple[str | None, str | None]], Event, FileFacts]:
    """Where `unscale_` goes when the backward and the clip run in one helper called by the
    function read, its steps after that call: before the clip in the helper (a closure, a
    project callable's `__call__`, a method), with the scaler as the helper writes it and each
    optimizer as the function read writes it, where the helper sees that name (a closure)."""
    backward, at_clip = inside
    assert isinstance(backward, Event) and isinstance(at_clip, Event)
    reading = file.summary.enclosing(clip.statement)[0] or file.tree
    through = clip.via[: len(clip.via) - len(at_clip.via)]
    written = [
        (
            backward.scaler_code,
            None if optimizer is None else free_code(facts, file, reading, through, optimizer),
        )
        for _, optimizer in codes
    ]
    return written, at_clip, at_clip.file


def first_clip(order: list[Event], start: int, index: int, scaler: str | None) -> Event:
    """Where the `unscale_` calls of the clip at `index` go: before the first clip of the same
    backward that no `unscale_` or step of this scaler separates from it. Every clip of one step
    then offers the same insertion, made once (`fixes/edits.ordered` keeps one of equal edits):
    a second `unscale_` of one optimizer before its step raises."""
    anchor = order[index]
    for event in reversed(order[start + 1 : index]):
        if event.kind in (EventKind.UNSCALE, EventKind.STEP) and event.scaler == scaler:
            break
        if event.kind is EventKind.CLIP and event.statement is not order[start].statement:
            anchor = event
    return anchor


def scaler_enabled(facts: ProjectFacts, file: FileFacts, backward: Event) -> bool | None:
    """True when every GradScaler that may be meant is enabled, False when none is, None when
    that is decided at run time (`enabled=args.amp`)."""
    call = backward.call.func
    assert isinstance(call, ast.Attribute) and isinstance(call.value, ast.Call)
    receiver = call.value.func
    assert isinstance(receiver, ast.Attribute)
    states: set[bool | None] = set()
    for _, made in scaler_makers(facts, backward.file, receiver.value):
        if made is None:  # a subclass's own `__init__` takes the arguments
            states.add(None)
            continue
        entry = entry_of(made.qname)  # the position is the class's (library model)
        if entry is None or entry.enabled is None:
            states.add(None)
            continue
        values = facts.argument(made, entry.enabled)
        if not values:
            states.add(True)
        for value in values:
            if isinstance(value, Lit) and isinstance(value.value, bool):
                states.add(value.value)
            else:
                states.add(None)
    if states == {False}:
        return False
    return True if states == {True} else None


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6", "no Lightning"),
    code=CODE,
    name="torch-clip-scaled-gradients",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TORCH,
    check=check,
    words=(b"clip_grad_norm_", b"clip_grad_value_"),
    requires=(b"GradScaler",),  # a GradScaler is made somewhere
    short="Plain torch clips gradients scaled by a GradScaler without unscaling them first.",
    full=(
        "In a function (and the project helpers it calls, followed in run order): "
        "`scaler.scale(loss).backward()` on a torch GradScaler, then "
        "`torch.nn.utils.clip_grad_norm_(...)` or `clip_grad_value_(...)`, then "
        "`scaler.step(optimizer)`, with no `scaler.unscale_(optimizer)` between the backward and "
        "the clip. The scaler is known by the call that made it (`torch.amp.GradScaler`, "
        "`torch.cuda.amp.GradScaler`, ..., or a project subclass of one that defines none of "
        "the methods torch's class scales, unscales and steps with), the clip by its "
        "qualified name. A scaler enabled "
        "at run time (`enabled=args.amp`) makes it a review finding; the fix is right either "
        "way (`unscale_` of a disabled scaler does nothing)."
    ),
    why_title="Why it trains wrong",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. Not offered when the scaler already "
            "unscales that optimizer after the clip (a second `unscale_` raises), or when the "
            "scaler or the optimizer cannot be named where the clip is."
        ),
    },
)
