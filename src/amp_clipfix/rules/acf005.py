"""ACF005: manual optimization under fp16 clips gradients before Lightning unscales them.

In manual optimization Lightning unscales the gradients inside `optimizer.step()`, right before
`on_before_optimizer_step`; a clip between `self.manual_backward(loss)` and `opt.step()` bounds
the scaled gradients. The fix moves the clip into `on_before_optimizer_step`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.callables_manual import helper_clip
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.lightning_api import (
    CLIP_HOOK,
    MODULE_BACKWARD,
    MODULE_CLIP,
)
from amp_clipfix.analysis.manual import (
    manual_reads,
    module_call,
    module_classes,
    module_code,
    moved_code,
    optimizer_of,
    rest_is_comment,
)
from amp_clipfix.analysis.manual_callers import open_backward, read_callers, receiver_at_reading
from amp_clipfix.analysis.manual_clips import any_manual_clip
from amp_clipfix.analysis.names import MODULE_UNSCALE_HELPER
from amp_clipfix.analysis.order import Body, Event, EventKind, Seen, anywhere, events
from amp_clipfix.analysis.training import (
    call_site,
    has_hook,
    is_torch_clip,
    may_be_fused,
    runtime_review,
    steps_after,
    trainers_scaler,
)
from amp_clipfix.analysis.values import ClsV, Fn
from amp_clipfix.models import Confidence, Edit, LightningPath, Site, SiteKind, Span, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix
from amp_clipfix.rules.scaled_limit import SCALE_OF, is_scaled, limit_of, scale_binding

CODE = "ACF005"

MESSAGE = (
    "Manual optimization clips gradients between `self.manual_backward(loss)` and "
    "`optimizer.step()`: under fp16 they are still scaled there, so the clip bounds the scaled "
    "gradients and the step sees max_norm / scale"
)

FIX = (
    "moves the clip into `on_before_optimizer_step(self, optimizer)`, which Lightning calls "
    "inside `optimizer.step()` after it has unscaled the gradients (the clip's optimizer becomes "
    "the hook's `optimizer`); right for every precision, since without a GradScaler the hook "
    "sees the same gradients"
)

SCALE = SCALE_OF.format(module="self")

FIX_SCALED = (
    "multiplies the clip's limit by the GradScaler's current scale (`get_scale()` of "
    "`self.trainer.precision_plugin.scaler`, 1.0 when there is none), so the scaled gradients "
    "are clipped to limit x scale and reach the step at the limit once they are unscaled (by "
    "Lightning, or inside a fused optimizer); right for every precision, since bf16 and 32-bit "
    "have no scaler and keep the limit as written. No `unscale_` is inserted. A norm clip "
    "leaves an overflow step's gradients non-finite, so the GradScaler still skips it; a value "
    "clip bounds infinite gradients as it did before"
)

UNFIXED = (
    "the clip cannot be moved as it is and its limit cannot be scaled (it sits in a helper the "
    "module calls, or its limit is not written at the call): clip in on_before_optimizer_step "
    "by hand, or multiply max_norm by the GradScaler's get_scale()"
)

UNFIXED_OUTSIDE = (
    "the clip is made outside the module's own methods and its limit cannot be scaled there "
    "(it sits in a helper, its limit is not written at the call, or the module is not a name "
    "or attribute there): clip in the module's on_before_optimizer_step, or multiply max_norm "
    "by the GradScaler's get_scale()"
)

WHY = (
    "With `self.automatic_optimization = False` and a GradScaler (`16-mixed`, `16`, or a "
    "`MixedPrecision` plugin with a scaler), `self.manual_backward(loss)` runs "
    "`scaler.scale(loss).backward()`: every gradient is multiplied by the loss scale (65536 at "
    "first, often thousands later). Lightning unscales them only inside `optimizer.step()`, "
    "after the closure and right before `on_before_optimizer_step`. A clip written between "
    "`manual_backward` and `step` (`torch.nn.utils.clip_grad_norm_(...)`, or "
    "`self.clip_gradients(opt, ...)` as Lightning's own docs show it) bounds the scaled "
    "gradients: with a scale of 4096 and `max_norm=1.0` the step sees 2.4e-4, and training "
    "crawls with no error (Lightning issue #18089). Calling `scaler.unscale_(opt)` by hand is "
    "no fix: Lightning unscales again inside `step()`, or raises."
)

BEFORE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

AFTER = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        opt.step()

    def on_before_optimizer_step(self, optimizer):
        self.clip_gradients(
            optimizer, gradient_clip_val=1.0, gradient_clip_algorithm="norm"
        )

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""


def classifier(facts: ProjectFacts, owner: ClsV | None):  # noqa: ANN201 - an order.Classify
    """Calls by what they are: a module's `manual_backward` (the module classes it may be are
    the event's detail), a clip, an optimizer's `step()`. `owner`: the class whose method is
    read."""

    def classify(file: FileFacts, call: ast.Call) -> Seen | None:
        func = call.func
        if (
            isinstance(func, ast.Name)
            and func.id == MODULE_UNSCALE_HELPER
            and any(isinstance(v, Fn) for v in facts.values(file, func))
        ):
            return Seen(EventKind.UNSCALE)  # amp-clipfix's own helper clips right where it is
        modules = module_call(facts, file, call, MODULE_BACKWARD, owner)
        if modules:
            return Seen(EventKind.BACKWARD, detail=tuple(modules))
        if call.args and module_call(facts, file, call, MODULE_CLIP, owner):
            if is_scaled(file, call, limit_of(call, "module")):
                return None  # its limit follows the loss scale: right on scaled gradients
            return Seen(EventKind.CLIP, optimizer=call.args[0], detail="module")
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and not call.args
            and optimizer_of(facts, file, func.value, owner)
        ):
            return Seen(EventKind.STEP, optimizer=func.value)
        if is_torch_clip(facts, file, call):
            if is_scaled(file, call, limit_of(call, "torch")):
                return None
            return Seen(EventKind.CLIP, detail="torch")
        return None

    return classify


def check(queries: Queries) -> Iterator[Found]:
    """The code that may call `manual_backward` (analysis/manual.py `manual_reads`), read with
    the project helpers it calls; a clip reached several ways is reported once, from the read
    nearest to it. Nothing is read where no call of the project can be a clip
    (analysis/manual_clips.py), or no module can optimize by hand (a finding's module must:
    `scaled_clip`)."""
    facts = queries.facts
    if not facts.may_optimize_manually() or not any_manual_clip(facts.evaluator):
        return
    found: dict[tuple[int, ...], tuple[int, Found]] = {}

    def read(file: FileFacts, function: Body, owner: ClsV | None) -> list[Event]:
        order = events(facts, file, function, classifier(facts, owner), outside=anywhere)
        for index, clip in enumerate(order):
            if clip.kind is EventKind.CLIP:
                one = scaled_clip(facts, file, owner, function, order, index)
                if one is not None:
                    calls = tuple(id(site_call) for site_call in one[0])
                    if calls not in found or len(clip.via) < found[calls][0]:
                        found[calls] = (len(clip.via), one[1])
        return order

    known: dict[int, bool] = {}  # id(function read) -> its backward is left to its callers
    helpers: list[tuple[FileFacts, Body]] = []
    for file in facts.with_words(b"manual_backward"):
        for function, owner in manual_reads(facts, file):
            order = read(file, function, owner)
            known[id(function)] = open_backward(facts, file, function, order)
            if known[id(function)]:
                helpers.append((file, function))
    # the callers of a backward left open, in any module (analysis/manual_callers.py)
    read_callers(facts, helpers, lambda f, r: read(f, r, facts.class_of(f, r)), known)
    for _, finding in found.values():
        yield finding


def scaled_clip(
    facts: ProjectFacts,
    file: FileFacts,
    owner: ClsV | None,
    function: ast.AST,
    order: list[Event],
    index: int,
) -> tuple[tuple[ast.Call, ...], Found] | None:
    clip = order[index]
    backwards = [e for e in order[:index] if e.kind is EventKind.BACKWARD]
    steps = steps_after(order, index)
    if not backwards or not steps:
        return None
    made_for = backwards[-1].detail  # the module classes (analysis/manual.py)
    assert isinstance(made_for, tuple)
    passed = receiver_at_reading(facts, file, backwards[-1])
    if passed is not None:  # a helper's backward: the module this reading gives it, if known
        summary = facts.evaluator.summary(file.path) or file.summary
        made_for = tuple(module_classes(facts, summary, passed, owner)) or made_for
    modules = [m for m in made_for if facts.manual_optimization(m) is not False]
    if not modules:
        return None  # the module the gradients are made for optimizes automatically
    cls = modules[0]
    manual = facts.manual_optimization(cls)
    if clip.detail == "module" and may_be_fused(facts, cls):
        return None  # Lightning refuses that clip under fp16 (ACF002), whose fix clips it right
    state = trainers_scaler(facts, cls)
    if state is False:
        return None  # every Trainer that trains it runs without a GradScaler
    sites: tuple[Site, ...] = (
        call_site(backwards[-1], SiteKind.BACKWARD),
        call_site(clip, SiteKind.GRAD_CLIP),
        call_site(steps[0], SiteKind.OPTIMIZER_STEP),
    )
    own = isinstance(function, ast.FunctionDef) and owner is not None and owner.node is cls.node
    if isinstance(function, ast.FunctionDef) and own:
        first = function.args.args[0].arg if function.args.args else None
        fixes = moved_to_hook(facts, file, cls, function, clip, steps, sites[1]) or limit_scaled(
            file, function, order, index, sites[1], "self" if first == "self" else None
        )
    else:
        module = module_code(file, clip, backwards[-1])
        fixes = limit_scaled(file, function, order, index, sites[1], module)
    if not fixes:  # the backward and the clip in one helper: the limit scaled there
        fixes = in_shared_helper(facts, clip, backwards[-1], sites[1])
    unfixed = None if fixes else (UNFIXED if own else UNFIXED_OUTSIDE)
    calls = (backwards[-1].call, clip.call, steps[0].call)
    review = runtime_review(manual, state)
    if review is not None:
        return calls, Found(
            sites,
            Confidence.REVIEW,
            review=review,
            fixes=fixes,
            condition="the module runs under fp16 mixed precision",
            unfixed=unfixed,
        )
    return calls, Found(sites, fixes=fixes, unfixed=unfixed)


def in_shared_helper(
    facts: ProjectFacts, clip: Event, backward: Event, target: Site
) -> tuple[RuleFix, ...]:
    """The clip's limit scaled in the helper that runs both the backward and the clip
    (callables_manual.helper_clip), the scale bound in the helper's function."""
    found = helper_clip(facts, clip, backward)
    if found is None:
        return ()
    where, inner, module = found
    function = where.summary.enclosing(inner.call)[0] or where.tree
    return limit_scaled(where, function, [inner], 0, target, module)


def limit_scaled(
    file: FileFacts,
    function: ast.AST,
    order: list[Event],
    index: int,
    target: Site,
    module: str | None,
) -> tuple[RuleFix, ...]:
    """The clip's limit multiplied by the GradScaler's scale, where the clip cannot move (it
    reads values local to the step): the call must be written in the function read, with its
    limit written at the call; `module` is the module's code there (`self` in its method).
    The scale is bound to a name once per step and block (`scale_binding`)."""
    clip = order[index]
    limit = limit_of(clip.call, clip.detail)
    if (
        clip.via
        or module is None
        or limit is None
        or (isinstance(limit, ast.Constant) and limit.value is None)
    ):
        return ()
    code = file.code(limit)
    if not isinstance(limit, (ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Subscript)):
        code = f"({code})"
    name, binding = scale_binding(file, function, order, index, module)
    edits = (*binding, file.replace(limit, f"{code} * {name}"))
    safety = FIX_SCALED.replace("`self.trainer", f"`{module}.trainer")
    return (RuleFix(Strategy.UNSCALE, edits, safe=True, safety=safety, targets=(target,)),)


def moved_to_hook(
    facts: ProjectFacts,
    file: FileFacts,
    cls: ClsV,
    method: ast.FunctionDef,
    clip: Event,
    steps: list[Event],
    target: Site,
) -> tuple[RuleFix, ...]:
    """The clip moved into a new `on_before_optimizer_step`, when that keeps what it does:
    the clip is a statement of the method itself, its result unused, it reads nothing local
    but the optimizer stepped, one optimizer steps, the optimizer is not fused (Lightning
    does not unscale those before the hook), and the class has no such hook yet."""
    statement = clip.statement
    hook_idx = facts.target.clip_hook_takes_optimizer_idx
    if (
        clip.via
        or statement not in method.body
        or not isinstance(statement, ast.Expr)
        or statement.value is not clip.call
        or len({s.optimizer for s in steps}) != 1
        or has_hook(facts, cls)
        or may_be_fused(facts, cls)
        or file.line(statement.lineno)[: file.span(statement).column].strip()
        or not rest_is_comment(file, statement)
    ):
        return ()
    optimizer = steps[0].optimizer
    code = moved_code(file, method, clip, optimizer)
    if code is None:
        return ()
    indent = file.indentation(method.lineno)
    body = file.indentation(method.body[0].lineno)
    lines = code.split("\n")
    ending = file.newline(method.lineno)
    params = "self, optimizer" + {True: ", optimizer_idx", False: "", None: ", *args"}[hook_idx]
    hook = (
        f"{ending}{indent}def {CLIP_HOOK}({params}):{ending}"
        + ending.join(body + line for line in lines)
        + ending
    )
    end = method.end_lineno or method.lineno
    edits = (
        Edit(file.path, Span(statement.lineno, 0, (statement.end_lineno or 0) + 1, 0), ""),
        Edit(file.path, Span(end + 1, 0, end + 1, 0), hook),
    )
    return (RuleFix(Strategy.UNSCALE, edits, safe=True, safety=FIX, targets=(target,)),)


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="manual-optimization-clip-scaled",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=(b"manual_backward", b".fit("),
    needs=(b"manual_backward",),  # manual optimization is written in the module
    short="Manual optimization under fp16 clips gradients that are still scaled.",
    full=(
        "In a LightningModule with `self.automatic_optimization = False` (in a method or the "
        "class body, of it or a project base): a clip (`torch.nn.utils.clip_grad_norm_`, "
        "`clip_grad_value_`, or `self.clip_gradients(opt, ...)`) after "
        "`self.manual_backward(loss)` and before `opt.step()` on an optimizer of the module, in "
        "a method or the project helpers it calls (a few calls deep: methods, mixins, functions "
        "given the module, in any module of the project). A function that runs the backward "
        "and leaves the step to its callers (`backward_of(module, loss)`) is also read in "
        "the functions that call it, whatever the import spelling (an alias, a module "
        "attribute, a package that re-exports it, a staticmethod), a few callers up. The "
        "receiver of `manual_backward` and `clip_gradients` is a "
        "module by its value, whatever its name: `self`, a function's parameter given "
        "`self` (the module the call passes), or `self.model` of a task object that holds "
        "the module. Certain when a "
        "Trainer whose `fit` is given "
        "the module runs with a GradScaler (`16-mixed`, `16`, or a `MixedPrecision` plugin "
        "with one); a review finding when no followed `fit` names the module or its precision "
        "is decided at run time; nothing when every such Trainer runs without a scaler."
    ),
    why_title="Why it trains wrong",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. On Lightning 1.x the hook is "
            "`on_before_optimizer_step(self, optimizer, optimizer_idx)`. Not offered when the "
            "clip reads a local value of the step other than the optimizer, is inside a block "
            "or a helper, uses its result, when the module steps several optimizers or already "
            "has the hook, or when the optimizer may be fused (Lightning does not unscale a "
            "fused optimizer before the hook). There it "
            f"{FIX_SCALED}: `loss_scale = {SCALE}` is bound once before the step's first such "
            "clip and `max_norm=limit` becomes `max_norm=limit * loss_scale`. Not offered "
            "for a clip inside a helper the module calls, or one without its limit written at "
            "the call; the finding then says what to do. A clip written outside the module's "
            "own methods (a task object's `self.model.clip_gradients(...)`, torch's clip after "
            "`self.model.manual_backward(loss)`) cannot move into its hook: its limit is scaled "
            "with the scale read through that module (`self.model.trainer`), where the module "
            "is written as a name or attribute."
        ),
    },
)
