"""ACF006: Fabric under fp16 clips with torch's clip after `fabric.backward(loss)`.

`fabric.backward(loss)` scales the loss with the run's GradScaler; the gradients stay scaled
until the optimizer's step. torch's `clip_grad_norm_` there bounds the scaled gradients. The fix
clips through Fabric, which unscales first.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from amp_clipfix.analysis.callables import bound_receivers, caller_readings, calls_instance
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.link import sort_key
from amp_clipfix.analysis.names import (
    FABRIC_ROOTS,
    FABRIC_UNSCALE_HELPER,
)
from amp_clipfix.analysis.order import (
    Body,
    Classify,
    Event,
    EventKind,
    Outside,
    Seen,
    events,
    functions,
    key,
    parameter_keys,
)
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.training import call_site, is_torch_clip, steps_after
from amp_clipfix.analysis.values import Fn
from amp_clipfix.analysis.written_events import (
    any_fabric_backward,
    writes_backward_with_arguments,
)
from amp_clipfix.models import Confidence, LightningPath, Site, SiteKind, Strategy
from amp_clipfix.records import replace
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix
from amp_clipfix.rules.fabric_edits import FIX, FIX_FUSED, through_fabric
from amp_clipfix.rules.fabric_steps import (
    fabric_values,
    scaler_state,
    steps_optimizer,
)

CODE = "ACF006"

MESSAGE = (
    "Fabric under fp16 clips with torch's clip after `fabric.backward(loss)`: the gradients are "
    "still scaled there, so the clip bounds the scaled gradients and the step sees "
    "max_norm / scale"
)

UNFIXED = (
    "the clip cannot be rewritten as it is (its parameters are not `model.parameters()`, its "
    "result is used in a way Fabric's does not give, or several optimizers step): clip with "
    "fabric.clip_gradients(model, optimizer, ..., error_if_nonfinite=False) by hand"
)

HELPER = (
    "the clip is in a helper whose caller steps the optimizer, so it cannot be rewritten where "
    "it is: clip with fabric.clip_gradients(model, optimizer, ..., error_if_nonfinite=False) "
    "by hand, with the optimizer the caller steps"
)
CALLED = (
    "the clip is in a helper that the function running the backward and the step calls, so it "
    "cannot be rewritten where it is: clip with fabric.clip_gradients(model, optimizer, ..., "
    "error_if_nonfinite=False) by hand where the helper is called"
)
UNKNOWN_STEP = (
    "what the step's receiver is is decided at run time, so no fix is built on it: if it is "
    "the optimizer, clip with fabric.clip_gradients(model, optimizer, ..., "
    "error_if_nonfinite=False) by hand"
)
SCALER_REVIEW = "whether the Fabric uses a GradScaler (fp16) is decided at run time"
SCALER_CONDITION = "the Fabric runs under fp16 mixed precision"
STEP_REVIEW = "whether the `.step()` after the clip steps an optimizer is decided at run time"
STEP_CONDITION = "the `.step()` after the clip steps the optimizer"

WHY = (
    'With a GradScaler (`precision="16-mixed"`, `16`, or a `MixedPrecision` plugin given one) '
    "`fabric.backward(loss)` runs `scaler.scale(loss).backward()`: every gradient is multiplied "
    "by the loss scale until `optimizer.step()` unscales them. "
    "`torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)` in between bounds the scaled "
    "gradients: with a scale of 4096 the step sees 2.4e-4, and training crawls with no error. "
    "`fabric.clip_gradients(...)` unscales first (`scaler.unscale_`), and `scaler.step` then "
    "knows the gradients are unscaled."
)

BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)

for batch in torch.randn(10, 8, 32, device=fabric.device):
    loss = model(batch).sum()
    fabric.backward(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
"""

AFTER = BEFORE.replace(
    "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
    "fabric.clip_gradients(model, optimizer, max_norm=1.0, error_if_nonfinite=False)",
)


def classifier(facts: ProjectFacts):  # noqa: ANN201 - an order.Classify
    def classify(file: FileFacts, call: ast.Call) -> Seen | None:
        func = call.func
        if (
            isinstance(func, ast.Name)
            and func.id == FABRIC_UNSCALE_HELPER
            and any(isinstance(v, Fn) for v in facts.values(file, func))
        ):
            return Seen(EventKind.UNSCALE)  # amp-clipfix's own helper clips through Fabric
        if isinstance(func, ast.Attribute) and func.attr == "backward" and call.args:
            fabrics = fabric_values(facts, file, func.value)
            if fabrics:
                return Seen(EventKind.BACKWARD, scaler=func.value, detail=fabrics)
        if call.args:  # `fabric.backward` handed on as a value (no fix is built on it)
            fabrics = bound_fabrics(facts, file, func)
            if fabrics:
                return Seen(EventKind.BACKWARD, detail=fabrics)
        if isinstance(func, ast.Attribute) and func.attr == "step" and not call.args:
            stepped = steps_optimizer(facts, file, func.value)
            if stepped is False:
                return None  # a scheduler's, a project object's: no optimizer steps (by value)
            return Seen(EventKind.STEP, optimizer=func.value, detail=stepped)
        if is_torch_clip(facts, file, call):
            return Seen(EventKind.CLIP)
        return None

    return classify


def bound_fabrics(facts: ProjectFacts, file: FileFacts, func: ast.expr) -> list:
    """The Fabrics whose `backward` the callee may be, as a bound method held as a value."""
    found: list = []
    for summary, receiver in bound_receivers(facts, file, func, "backward"):
        where = facts.file(summary.path)
        if where is not None and where.tree is summary.tree:
            found += fabric_values(facts, where, receiver)
    return found


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    if not any_fabric_backward(facts.evaluator):
        return  # no reading can meet a Fabric's backward (analysis/written_events.py)
    classify = classifier(facts)
    reported: set[int] = set()
    outside = fabric_backward_module(facts)
    for file in facts.with_words(b"clip_grad_norm_", b"clip_grad_value_"):
        orders: dict[int, list[Event]] = {}  # each function read once here

        def order_of(function: Body, file: FileFacts = file, orders: dict = orders) -> list[Event]:
            if id(function) not in orders:
                orders[id(function)] = events(facts, file, function, classify, outside=outside)
            return orders[id(function)]

        readings = functions(file)
        if b"backward" not in file.document.text.encode():
            # a clip helper: read where it is called (callables.caller_readings)
            for where, order, index in clips_in_callers(facts, file, classify, outside, order_of):
                found = scaled_clip(facts, where, order, index)
                if found is not None and id(order[index].call) not in reported:
                    reported.add(id(order[index].call))
                    yield found
            # and where a helper of another module runs the backward: read here too
            readings = (
                f for f in functions(file) if any(e.kind is EventKind.BACKWARD for e in order_of(f))
            )
        for function in readings:
            order = order_of(function)
            for index, clip in enumerate(order):
                if clip.kind is not EventKind.CLIP or id(clip.call) in reported:
                    continue
                found = scaled_clip(facts, file, order, index)
                if found is None and steps_in_callers(order, index, function):
                    found = through_callers(facts, file, function, clip, classify, outside)
                if found is not None:
                    reported.add(id(clip.call))
                    yield found


def fabric_backward_module(facts: ProjectFacts) -> Outside:
    """Which modules holding no search word a reading enters helpers of: those whose text
    may call a `backward` with an argument (written_events.py: a Fabric's backward is only
    such a call, or a bound one handed on, which a module with the clip's words holds)."""
    contents = facts.evaluator.contents
    return lambda path: writes_backward_with_arguments(path, contents[path])


def clips_in_callers(
    facts: ProjectFacts,
    file: FileFacts,
    classify: Classify,
    outside: Outside,
    order_of: Callable[[Body], list[Event]],
) -> Iterator[tuple[FileFacts, list[Event], int]]:
    """The clips of a file that runs no backward, read in the callers of the function each is
    written in (any module, a few levels up): a clip helper imported from another module.
    `order_of`: a function's own reading."""
    for function in functions(file):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = [e.call for e in order_of(function) if e.kind is EventKind.CLIP and not e.via]
        if not own:
            continue
        for where, reading, call in caller_readings(facts, file, function):
            order = events(facts, where, reading, classify, outside=outside)
            for index, event in enumerate(order):
                if event.kind is EventKind.CLIP and event.call in own and call in event.via:
                    yield where, order, index


def steps_in_callers(order: list[Event], index: int, function: ast.AST) -> bool:
    """Whether the clip at `index`, written in `function` after a backward there, may meet its
    optimizer's step only in the function's callers: nothing steps after it here."""
    return (
        isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not order[index].via
        and any(e.kind is EventKind.BACKWARD for e in order[:index])
        and not steps_after(order, index)
    )


def through_callers(
    facts: ProjectFacts,
    file: FileFacts,
    function: ast.AST,
    clip: Event,
    classify: Classify,
    outside: Outside = None,
) -> Found | None:
    """A helper that runs the backward and the clip and leaves the step to its callers (a
    scheduler may be the only step it makes): each project call of the helper is read in run
    order, where the clip is reached through that call and the caller's step follows it. Of
    several callers, a certain finding first, then the first step site."""
    evaluator = facts.evaluator
    summary = evaluator.summary(file.path)
    body = getattr(function, "body", None)
    if summary is None or summary.tree is not file.tree or not body:
        return None
    found: list[Found] = []
    readings: list[tuple[FileFacts, list[Event], int]] = []
    for call, caller in evaluator.callers(function, evaluator.ctx_of(summary, body[0])):
        where = facts.file(caller.summary.path)
        reading = caller.func if caller.func is not None else caller.summary.tree
        if where is None or where.tree is not caller.summary.tree:
            continue
        if not isinstance(reading, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        order = events(facts, where, reading, classify, outside=outside)
        for index, event in enumerate(order):
            if event.call is clip.call and event.via and event.via[0] is call:
                made = scaled_clip(facts, where, order, index, in_helper=True)
                if made is not None:
                    found.append(made)
                    readings.append((where, order, index))
    if not found:
        return None
    chosen = min(found, key=lambda f: (f.confidence is not Confidence.HIGH, sort_key(f.sites[2])))
    fixes = in_helper(facts, file, function, readings, chosen.sites[1])
    return replace(chosen, fixes=fixes, unfixed=None) if fixes else chosen


def in_helper(
    facts: ProjectFacts,
    file: FileFacts,
    function: ast.AST,
    readings: list[tuple[FileFacts, list[Event], int]],
    target: Site,
) -> tuple[RuleFix, ...]:
    """The clip rewritten in the helper, on the helper's parameter that every call of it
    binds to the optimizer its caller then steps (`train_step(fabric, model, optimizer, ...)`
    followed by `optimizer.step()`): the backward and the clip written in the helper itself,
    every step after it certain and of that one optimizer, the parameter never reassigned."""
    chosen: set[str] | None = None
    steps: list[Event] = []
    clip = backward = None
    for where, order, index in readings:
        clip = order[index]
        backward = [e for e in order[:index] if e.kind is EventKind.BACKWARD][-1]
        after = steps_after(order, index)
        call = clip.via[0]
        if len(clip.via) != 1 or backward.via != (call,) or after[0].via:
            return ()
        if any(s.detail is not True for s in after) or len({s.optimizer for s in after}) != 1:
            return ()
        helpers = [v for v in facts.values(where, call.func) if isinstance(v, Fn)]
        if len(helpers) != 1 or helpers[0].node is not function:
            return ()
        params = {
            name
            for name, (argument, _) in parameter_keys(helpers[0], call).items()
            if argument == after[0].optimizer
        }
        chosen = params if chosen is None else chosen & params
        steps.append(after[0])
    local = facts.evaluator.local_bindings(function)
    names = sorted(
        p.arg
        for p in all_params(function.args)  # type: ignore[attr-defined]
        if key(ast.Name(p.arg, ast.Load())) in (chosen or ()) and p.arg not in local
    )
    if not names or clip is None or backward is None:
        return ()
    assert isinstance(backward.call.func, ast.Attribute)
    fabric = file.code(backward.call.func.value)
    steps = [replace(step, optimizer=names[0], via=()) for step in steps]
    steps[0] = replace(steps[0], optimizer_code=names[0])
    backward = replace(backward, via=(), scaler_code=fabric)
    return through_fabric(facts, file, replace(clip, via=()), backward, steps, target)


def scaled_clip(
    facts: ProjectFacts, file: FileFacts, order: list[Event], index: int, in_helper: bool = False
) -> Found | None:
    """The finding of the clip at `index` of a function's events. A backward and a clip run by
    one helper call are the helper's own (read there), unless `in_helper`: the helper leaves
    the step to this caller (through_callers)."""
    clip = order[index]
    backwards = [e for e in order[:index] if e.kind is EventKind.BACKWARD]
    steps = steps_after(order, index)
    if not backwards or not steps:
        return None
    if clip.statement is backwards[-1].statement and not in_helper:
        if (
            not clip.via
            or any(step.statement is clip.statement for step in steps)
            or not calls_instance(facts, file, clip.via[0])
        ):
            return None  # the helper's own order, or a function's whose callers it reads
        in_helper = True  # a project object's __call__ that leaves the step to this caller
    backward = backwards[-1]
    assert isinstance(backward.detail, list)
    state = scaler_state(facts, backward.detail)
    if state is False:
        return None
    # A step whose receiver's value is not followed (detail None) may be an optimizer's: the
    # clip may come before the step, so a review, and no fix is built on what it steps.
    certain = [step for step in steps if step.detail is True]
    sites = (
        call_site(backward, SiteKind.BACKWARD),
        call_site(clip, SiteKind.GRAD_CLIP),
        call_site((certain or steps)[0], SiteKind.OPTIMIZER_STEP),
    )
    fixes = through_fabric(facts, file, clip, backward, steps, sites[1]) if certain else ()
    unfixed = (
        None
        if fixes
        else UNKNOWN_STEP
        if not certain
        else HELPER
        if in_helper
        else CALLED
        if clip.via and clip.statement is not backward.statement
        else UNFIXED
    )
    reviews = [] if state else [SCALER_REVIEW]
    conditions = [] if state else [SCALER_CONDITION]
    if not certain:
        reviews.append(STEP_REVIEW)
        conditions.append(STEP_CONDITION)
    if reviews:
        return Found(
            sites,
            Confidence.REVIEW,
            review="; ".join(reviews),
            fixes=fixes,
            condition=" and ".join(conditions),
            unfixed=unfixed,
        )
    return Found(sites, fixes=fixes, unfixed=unfixed)


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="fabric-torch-clip-scaled",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.FABRIC,
    check=check,
    words=(b"clip_grad_norm_", b"clip_grad_value_"),
    requires=(b"Fabric",),  # a Fabric is made or declared somewhere
    imports=FABRIC_ROOTS,  # ... from a Lightning package some file imports
    short="Fabric under fp16 clips with torch's clip before the gradients are unscaled.",
    full=(
        "In a function (and the project helpers it calls, in run order: in a module that "
        "holds a word the searches read, or one that may call a `backward` with an argument): "
        "`fabric.backward(loss)` on a Fabric (by value: `Fabric(...)` followed through "
        "assignments, attributes and parameters), then `torch.nn.utils.clip_grad_norm_(...)` "
        "or `clip_grad_value_(...)`, then `optimizer.step()`; where a helper runs the backward "
        "and the clip and leaves the step to its caller, the step is looked for in each project "
        "call of the helper (its caller's step: a finding without a fix). A `.step()` is an "
        "optimizer's by its receiver's value: a torch optimizer (also as `fabric.setup(...)` "
        "returns it, or a LightningModule's `optimizers()`); a learning-rate scheduler or a "
        "project object is none. Certain when the Fabric uses a GradScaler (`16-mixed`, `16`, or a "
        "`MixedPrecision` plugin with one) and the step is an optimizer's; a review finding "
        "when its precision is decided at run time, or when only a receiver the analysis "
        "cannot follow steps (then without a fix: the fix would hand that receiver to "
        "Fabric as the optimizer); nothing under bf16 or 32-bit."
    ),
    why_title="Why it trains wrong",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. Right for every precision (without a scaler "
            "Fabric clips as torch does). Not offered when the clip's parameters are not "
            "`model.parameters()`, the clip is in a helper (unless the helper runs the backward "
            "and the clip, and every project call of it passes, as one of its parameters, the "
            "optimizer its caller then steps: the clip is rewritten there on that parameter), "
            "or several optimizers step. When "
            f"the optimizer may be fused (`fabric.clip_gradients` refuses those: ACF001) it "
            f"{FIX_FUSED}."
        ),
    },
)
