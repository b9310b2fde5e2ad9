"""ACF003: the ACF001 or ACF002 pattern where a piece is decided at run time (review).

No search of its own: a finding of the other rules becomes this one when one of its pieces is not
written as a literal, and says what a person must decide.
"""

from __future__ import annotations

from amp_clipfix.models import Strategy
from amp_clipfix.rules import acf001, acf002
from amp_clipfix.rules.base import Rule, safety

# What each unknown piece must turn out to be for Lightning to raise.
CONDITIONS = {
    "the precision": "the precision chosen at run time is mixed",
    "whether the optimizer is fused": "the optimizer is fused",
    "whether gradients are clipped": "gradients are clipped",
    "which module the Trainer trains": "the Trainer trains this module",
}

WHY = f"On the Fabric path:\n\n{acf001.WHY}\n\nOn the Trainer path:\n\n{acf002.WHY}"

BEFORE = """\
import torch
from lightning.fabric import Fabric


def train(model, precision):
    fabric = Fabric(precision=precision)  # "16-mixed"? "bf16-mixed"? "32-true"?
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    ...
    fabric.clip_gradients(model, optimizer, max_norm=1.0)
    optimizer.step()
"""

# What `amp-clipfix apply` (strategy auto: unscale) makes of BEFORE; a test keeps it true.
EXAMPLE_AFTER = '''\
import torch
from lightning.fabric import Fabric


def clip_gradients_unscaled(
    fabric,
    module,
    optimizer,
    clip_val=None,
    max_norm=None,
    norm_type=2.0,
    error_if_nonfinite=True,
):
    """`fabric.clip_gradients(...)`, which also clips an optimizer that unscales its own
    gradients (fused=True) under a GradScaler (inserted by amp-clipfix).

    Lightning refuses to unscale such an optimizer for clipping; torch can: unscale it with the
    run's own GradScaler, then clip, and the scaler's step passes no scale to the fused kernel.
    Returns what `fabric.clip_gradients` returns: the total norm for `max_norm`, else None.
    """
    import torch

    inner = getattr(optimizer, "optimizer", optimizer)  # unwrap Fabric's optimizer wrapper
    if not getattr(inner, "_step_supports_amp_scaling", False):
        return fabric.clip_gradients(
            module, optimizer, clip_val, max_norm, norm_type, error_if_nonfinite
        )
    strategy = type(fabric.strategy)
    sharded = ("FSDP", "DeepSpeed", "Sharded", "ModelParallel")
    if any(word in cls.__name__ for cls in strategy.__mro__ for word in sharded):
        raise RuntimeError(
            f"clip_gradients_unscaled (amp-clipfix) does not support {strategy.__name__}: "
            "sharded strategies clip differently; use fused=False on this optimizer instead"
        )
    if clip_val is not None and max_norm is not None:
        raise ValueError("Only one of `clip_val` or `max_norm` can be set")
    if clip_val is None and max_norm is None:
        raise ValueError("You have to specify either `clip_val` or `max_norm`")
    scaler = getattr(fabric.strategy.precision, "scaler", None)
    if scaler is not None:
        scaler.unscale_(inner)
    parameters = [p for group in inner.param_groups for p in group["params"]]
    if clip_val is not None:
        torch.nn.utils.clip_grad_value_(parameters, clip_value=clip_val)
        return None
    return torch.nn.utils.clip_grad_norm_(
        parameters, max_norm, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite
    )


def train(model, precision):
    fabric = Fabric(precision=precision)  # "16-mixed"? "bf16-mixed"? "32-true"?
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    ...
    clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)
    optimizer.step()
'''

RULE = Rule(
    code="ACF003",
    message="a piece of ACF001 or ACF002 is decided at run time",
    why=WHY,
    level="warning",
    name="clip-fused-decided-at-run-time",
    short=(
        "Gradient clipping on a fused optimizer under mixed precision, where a piece is "
        "decided at run time: review needed."
    ),
    full=(
        "The ACF001 or ACF002 pattern where the precision, the `fused` flag or the "
        "clipping is not written as a literal (`Fabric(precision=args.precision)`, "
        "`fused` passed through `**kwargs` or `functools.partial`, `Trainer(**params)`, "
        "YAML configs). Lightning raises only if the run-time values complete the "
        "pattern; the finding says what a person must decide. A fix is applied only "
        "when it does not depend on the unknown piece."
    ),
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`) where it applies. Its helper decides at run time, so it is "
            "correct whatever the run-time precision or `fused` flag turn out to be; it is "
            "refused when whether gradients are clipped at all is decided at run time.",
        ),
        Strategy.BF16.value: safety(
            Strategy.BF16,
            "Applies only when the precision itself is written as a literal, and never "
            "on the Trainer path of Lightning <= 2.6.6 (see ACF002).",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Applies when `fused=True` is written as a literal: it is safe whatever "
            "the run-time precision turns out to be. `auto` picks it where `unscale` does "
            "not apply.",
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Applies where the clip call is a plain statement or assignment (an assigned "
            "result stays usable); the helper "
            "decides at run time, so it skips clipping only where Lightning would raise.",
        ),
    },
)
