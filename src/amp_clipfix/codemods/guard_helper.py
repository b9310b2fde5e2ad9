"""The `can_clip_gradients` function that the guard fix inserts into a user's module.

It is kept as source text so that the inserted code is exactly what the runtime tests exercise.
It imports nothing private and nothing from Lightning, so it works with every 2.x release.
"""

from __future__ import annotations

HELPER_NAME = "can_clip_gradients"

HELPER_SOURCE = '''\
def can_clip_gradients(precision, optimizer):
    """Tell whether Lightning can clip the gradients of `optimizer` (inserted by amp-clipfix).

    Lightning cannot clip gradients when the optimizer unscales them inside `step()` (a fused torch
    optimizer) while a GradScaler is in play; the Trainer's mixed precision plugin refuses even
    without a scaler (Lightning <= 2.6.6). `precision` is a precision plugin, a Fabric or a
    Trainer. Warns once when clipping is skipped.
    """
    import warnings

    precision = getattr(precision, "precision_plugin", precision)
    precision = getattr(getattr(precision, "strategy", None), "precision", precision)
    if not getattr(optimizer, "_step_supports_amp_scaling", False):
        return True
    trainer_amp = any(
        cls.__name__ in ("MixedPrecision", "MixedPrecisionPlugin", "NativeMixedPrecisionPlugin")
        and cls.__module__.startswith(("lightning.pytorch.", "pytorch_lightning."))
        for cls in type(precision).__mro__
    )
    if getattr(precision, "scaler", None) is None and not trainer_amp:
        return True
    if not getattr(can_clip_gradients, "warned", False):
        can_clip_gradients.warned = True
        warnings.warn(
            "amp-clipfix: gradient clipping skipped because "
            f"{type(optimizer).__name__} unscales its own gradients (fused=True) and Lightning "
            "cannot clip them under this precision. Use fused=False to clip.",
            stacklevel=2,
        )
    return False
'''
