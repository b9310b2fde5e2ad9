"""What a Fabric training loop's receivers are, by value: the Fabric a `fabric.backward` runs
on and whether it scales the loss, and whether a `.step()` steps an optimizer (ACF006, ACF007).
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts, any_scaler
from amp_clipfix.analysis.names import FABRIC_SETUPS, LIGHTNING_MODULE_CLASSES, MODULE_OPTIMIZERS
from amp_clipfix.analysis.values import Ext, FabricV, Inst, Opaque, Opt, SelfV, is_off


def fabric_values(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> list[FabricV]:
    return [v for v in facts.values(file, node) if isinstance(v, FabricV)]


def scaler_state(facts: ProjectFacts, fabrics: list[FabricV]) -> bool | None:
    """True when a Fabric it may be uses a GradScaler for certain, False when none does, None
    when that is decided at run time."""
    return any_scaler(facts.uses_scaler(fabric) for fabric in fabrics)


def setup_arguments(facts: ProjectFacts, value: object) -> list[object] | None:
    """What a value made by `fabric.setup(model, optimizer)` / `setup_optimizers(...)` (on a
    Fabric, by value) may hold: the values of its arguments; None for any other value."""
    made = getattr(value, "node", None)
    if not (
        isinstance(value, Opaque)
        and isinstance(made, ast.Call)
        and isinstance(made.func, ast.Attribute)
        and made.func.attr in FABRIC_SETUPS
        and value.summary is not None
    ):
        return None
    evaluator = facts.evaluator
    ctx = evaluator.ctx_of(value.summary, made)
    if not any(isinstance(v, FabricV) for v in evaluator.ev(made.func.value, ctx)):
        return None
    return [v for argument in made.args for v in evaluator.force(evaluator.ev(argument, ctx))]


def optimizers_of(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> list[Opt]:
    """The optimizers the expression may hold, also through `fabric.setup(model, optimizer)`."""
    values = facts.values(file, node)
    optimizers = [v for v in values if isinstance(v, Opt)]
    for value in values:  # `model, optimizer = fabric.setup(model, optimizer)`: its arguments
        optimizers += [v for v in setup_arguments(facts, value) or () if isinstance(v, Opt)]
    return optimizers


def steps_optimizer(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> bool | None:
    """Whether `node.step()` steps an optimizer, by the receiver's value: True when every
    value it may hold is one (a torch optimizer, one `fabric.setup(...)` wrapped, a
    LightningModule's `optimizers()`), False when none is (a learning-rate scheduler, a
    project object whose class has no library base, a literal...), None when that is decided
    at run time (a value the analysis cannot follow)."""
    known = unknown = False
    for value in facts.values(file, node) or [Opaque(node, file.summary)]:
        kind = optimizer_kind(facts, value)
        known, unknown = known or kind is True, unknown or kind is None
    if unknown:
        return None
    return known


def optimizer_kind(facts: ProjectFacts, value: object) -> bool | None:
    """Whether one value is an optimizer (None: decided at run time)."""
    if isinstance(value, Opt):
        return True
    if isinstance(value, Inst):
        # a project class deriving from a library class (torch.optim.Optimizer, say) may be one
        return None if any(isinstance(c, Ext) for c in facts.evaluator.mro(value.cls)) else False
    if not isinstance(value, Opaque):
        return False  # a scheduler, a literal, a function, a Fabric... is no optimizer
    given = setup_arguments(facts, value)
    if given is not None:
        return True if any(isinstance(v, Opt) for v in given) else None
    made = value.node
    if (
        isinstance(made, ast.Call)
        and isinstance(made.func, ast.Attribute)
        and made.func.attr == MODULE_OPTIMIZERS
        and value.summary is not None
    ):
        evaluator = facts.evaluator
        owners = evaluator.ev(made.func.value, evaluator.ctx_of(value.summary, made))
        if any(
            isinstance(owner, SelfV) and evaluator.derives_from(owner.cls, LIGHTNING_MODULE_CLASSES)
            for owner in owners
        ):
            return True
    return None


def optimizer_may_be_fused(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> bool:
    """fabric.clip_gradients refuses an optimizer that unscales itself (ACF001); one that is
    not followed to where it is built may be fused."""
    optimizers = optimizers_of(facts, file, node)
    if not optimizers:
        return True
    return any(not is_off(f) for opt in optimizers for f in facts.evaluator.force(opt.fused))
