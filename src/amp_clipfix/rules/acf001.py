"""ACF001: Fabric clips the gradients of a fused optimizer while a GradScaler is in play."""

from __future__ import annotations

from amp_clipfix.analysis.link import fabric_groups
from amp_clipfix.models import LightningPath, Strategy
from amp_clipfix.rules.base import FABRIC_ERROR, Rule, safety

BF16_SCALER_ERROR = "ValueError: `precision='bf16-mixed'` does not use a scaler"

MESSAGE = (
    "Fabric clips gradients of a fused optimizer under fp16 mixed precision: Lightning raises "
    "NotImplementedError (Gradient clipping is not implemented for optimizers handling the "
    "unscaling)"
)

WHY = (
    "Torch's fused optimizers (`fused=True` on Adam, AdamW, SGD, Adagrad) unscale their own "
    'gradients inside `step()`. With a GradScaler in play (precision `16-mixed`, `16` or `"16"`, '
    "or a `MixedPrecision`/`FSDPPrecision` plugin given a scaler), Lightning's "
    "`MixedPrecision.unscale_gradients` refuses to unscale them for clipping, so "
    "`fabric.clip_gradients(...)` raises:\n\n"
    f"    {FABRIC_ERROR}\n\n"
    "Plain torch has no such limit (`GradScaler.unscale_` + `clip_grad_norm_` work with fused "
    "optimizers): the limitation is Lightning's."
)

BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
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


fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)
optimizer.step()
'''

RULE = Rule(
    code="ACF001",
    message=MESSAGE,
    why=WHY,
    lightning_path=LightningPath.FABRIC,
    find=fabric_groups,
    name="fabric-clip-fused-fp16",
    short="Fabric clips gradients of a fused optimizer under fp16 mixed precision.",
    full=(
        "Within one module, a Fabric whose precision uses a GradScaler (`16-mixed`, `16`, "
        '`"16"`, or a Fabric `MixedPrecision`/`FSDPPrecision` plugin with a scaler), an '
        "optimizer built with `fused=True` and a `clip_gradients(...)` call on the Fabric "
        "object. Lightning raises NotImplementedError at the clip call."
    ),
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`). The clip call becomes "
            "`clip_gradients_unscaled(fabric, model, optimizer, ...)`, a helper inserted once "
            "into the module: for an optimizer that unscales its own gradients it unscales "
            "them with `fabric.strategy.precision.scaler` and clips with torch (returning the "
            "total norm as Fabric does); every other optimizer goes to `fabric.clip_gradients` "
            "unchanged. Refused under a sharded strategy (FSDP, DeepSpeed) in the code; the "
            "helper raises under one chosen at run time.",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Rewrites `fused=True` to `fused=False` where the optimizer is built. "
            "Used by `auto` where `unscale` does not apply (a sharded strategy).",
        ),
        Strategy.BF16.value: safety(
            Strategy.BF16,
            'Rewrites the precision to `"bf16-mixed"`; a plugin '
            "loses its scaler argument, since bf16-mixed refuses one "
            f"({BF16_SCALER_ERROR}). "
            "A `scaler = GradScaler(...)` line only the plugin read, and an import nothing "
            "uses any more, go with it; a precision read from a module constant is "
            "rewritten at the constant.",
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Wraps the clip call in `if can_clip_gradients(fabric, optimizer):`, a helper "
            "inserted once into the module (it imports nothing private). An assigned "
            "result stays usable (`norm.item()`, `if norm > x`): the other branch binds "
            "`unclipped_gradient_norm(...)`, the total norm of the unscaled gradients.",
        ),
    },
)
