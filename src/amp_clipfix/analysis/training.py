"""What several rules ask of a training step, by value: whether a call is torch's clip or a
GradScaler's, the optimizer steps after a clip, the LightningModules that may optimize
manually, the GradScaler of the Trainers that train one, and whether one has the clip hook or
may return a fused optimizer.

Rules never import rules (an import-linter `independence` contract on `rules.acf*`): what more
than one rule asks lives here, and the library's names in the registry (names.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.decorators import replaced
from amp_clipfix.analysis.facts import FileFacts, Made, ProjectFacts, any_scaler
from amp_clipfix.analysis.lightning_api import CLIP_HOOK
from amp_clipfix.analysis.manual import items_of
from amp_clipfix.analysis.names import GRAD_SCALERS, TORCH_CLIPS
from amp_clipfix.analysis.order import Event, EventKind
from amp_clipfix.analysis.partials import called_qnames
from amp_clipfix.analysis.recording import TextTest
from amp_clipfix.analysis.scaler_calls import ScalerCalls, made_scaler, scaler_base
from amp_clipfix.analysis.values import ClsV, Fn, Inst, Opt, is_off
from amp_clipfix.models import Site, SiteKind


def is_scaler(
    facts: ProjectFacts, file: FileFacts, node: ast.expr, calls: ScalerCalls | None = None
) -> bool:
    """The expression may hold a GradScaler made by the library (any spelling); `calls`: the
    calls that may make one (analysis/scaler_calls.py; None: any call)."""
    return made_scaler(facts.evaluator, facts.values(file, node), calls)


def scaler_makers(
    facts: ProjectFacts, file: FileFacts, node: ast.expr
) -> list[tuple[ast.Call, Made | None]]:
    """The calls that may have made the GradScaler the expression holds: a library GradScaler
    call, with its `Made`, and a call of a project subclass that scales, unscales and steps as
    one (scaler_calls.scaler_base), with a `Made` of its library class where no project class
    of it defines `__init__` (the call's arguments are then the library class's), else None."""
    found: list[tuple[ast.Call, Made | None]] = [
        (m.call, m) for m in facts.constructions(file, node) if m.qname in GRAD_SCALERS
    ]
    evaluator = facts.evaluator
    for value in facts.values(file, node):
        if not isinstance(value, Inst) or value.call is None or value.ctx is None:
            continue
        base = scaler_base(evaluator, value.cls)
        if base is not None:
            own = any(
                isinstance(cls, ClsV) and "__init__" in evaluator.class_members(cls.node)
                for cls in evaluator.mro(value.cls)
            )
            summary = value.ctx.summary  # type: ignore[attr-defined]
            found.append((value.call, None if own else Made(base, value.call, summary)))
    return found


def is_torch_clip(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> bool:
    """The callee is torch's clip function by value, however it is spelled or bound (`clip =
    nn_utils.clip_grad_norm_`); a project function spelled like one is not. No spelling test
    first: order.events asks the evaluator about every callee anyway (helper_events)."""
    return bool(called_qnames(facts, file, call.func) & TORCH_CLIPS.keys())


def call_site(event: Event, kind: SiteKind) -> Site:
    """The event's call as a site, shown as written (on one line)."""
    code = " ".join(event.file.code(event.call).split()).replace("( ", "(").replace(", )", ")")
    return event.file.site(kind, event.call, f"`{code}`")


def steps_after(order: list[Event], index: int) -> list[Event]:
    """The optimizer steps after the event at `index`, up to the next backward (a later step
    belongs to other gradients)."""
    steps = []
    for event in order[index + 1 :]:
        if event.kind is EventKind.BACKWARD:
            break
        if event.kind is EventKind.STEP:
            steps.append(event)
    return steps


def manual_modules(
    facts: ProjectFacts, *words: bytes, where: TextTest | None = None
) -> Iterator[tuple[FileFacts, ClsV, list[ast.FunctionDef], bool | None]]:
    """The LightningModule classes (in files holding one of `words` and passing `where`) that
    may optimize manually, with their methods and whether they certainly do (None: decided at
    run time)."""
    if not facts.may_optimize_manually():
        return  # no class of the project can: its LightningModules are not looked for
    for file in facts.with_words(*words, where=where):
        for cls_node in file.summary.walked_classes():
            methods = [n for n in cls_node.body if isinstance(n, ast.FunctionDef)]
            cls = facts.class_of(file, methods[0]) if methods else None
            if cls is None or not facts.is_lightning_module(cls):
                continue
            manual = facts.manual_optimization(cls)
            if manual is not False:
                summary = facts.evaluator.summary(file.path) or file.summary
                runs = [m for m in methods if not replaced(facts.evaluator, summary, m)]
                yield file, cls, runs, manual


def runtime_review(manual: bool | None, scaler: bool | None) -> str | None:
    """What a manual-optimization finding leaves to a person, or None when it is certain."""
    unknown = []
    if manual is None:
        unknown.append("whether the module optimizes manually")
    if scaler is None:
        unknown.append("whether the Trainer that trains it uses a GradScaler (fp16)")
    if not unknown:
        return None
    return f"{' and '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} decided at run time"


def trainers_scaler(facts: ProjectFacts, cls: ClsV) -> bool | None:
    """Whether the Trainers that train the module use a GradScaler: True when one certainly
    does, False when none does, None when that is decided at run time (or no `fit` names it)."""
    trainers = facts.trainers_of(cls)
    if trainers is None:
        return None
    return any_scaler(facts.uses_scaler(trainer) for trainer in trainers)


def has_hook(facts: ProjectFacts, cls: ClsV) -> bool:
    """The module class or a project base defines `on_before_optimizer_step`."""
    return any(
        isinstance(klass, ClsV)
        and any(
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == CLIP_HOOK
            for s in klass.node.body
        )
        for klass in facts.evaluator.mro(cls)
    )


def may_be_fused(facts: ProjectFacts, cls: ClsV) -> bool:
    """An optimizer `configure_optimizers` returns may be fused (or cannot be followed)."""
    evaluator = facts.evaluator
    method = evaluator.instance_attribute(cls, "configure_optimizers", cls.node)
    fns = [m for m in method if isinstance(m, Fn)]
    if not fns:
        return True
    for fn in fns:
        ctx = evaluator.ctx(fn.summary, fn.node, fn.cls)
        for node in ast.walk(fn.node):
            if isinstance(node, ast.Return) and node.value is not None:
                values = evaluator.force(evaluator.ev(node.value, ctx))
                for value in [v for w in values for v in items_of(evaluator, w)]:
                    if isinstance(value, Opt) and any(
                        not is_off(f) for f in evaluator.force(value.fused)
                    ):
                        return True
                    if not isinstance(value, Opt):
                        return True
    return False
