"""The `can_clip_gradients` function that the guard fix inserts into a user's module.

It is kept as source text so that the inserted code is exactly what the runtime tests exercise.
It imports nothing private and nothing from Lightning, so it works with every 2.x release.
"""

from __future__ import annotations

from amp_clipfix.analysis import names

HELPER_NAME = names.GUARD_HELPER

HELPER_SOURCE = '''\
def can_clip_gradients(precision, optimizer):
    """Tell whether Lightning can clip the gradients of `optimizer` (inserted by amp-clipfix)."""
    # Lightning cannot clip when a fused optimizer unscales its own gradients while a GradScaler
    # is in play; the Trainer's MixedPrecision plugin refuses even without one (<= 2.6.6).
    # `precision` is a precision plugin, a Fabric or a Trainer. Warns once when it says no.
    import warnings

    precision = getattr(precision, "precision_plugin", precision)
    precision = getattr(getattr(precision, "strategy", None), "precision", precision)
    if not getattr(optimizer, "_step_supports_amp_scaling", False):
        return True
    trainer_plugins = ("MixedPrecision", "MixedPrecisionPlugin", "NativeMixedPrecisionPlugin")
    trainer_packages = ("lightning.pytorch.", "pytorch_lightning.")
    trainer_amp = False
    for cls in type(precision).__mro__:
        if cls.__name__ in trainer_plugins and cls.__module__.startswith(trainer_packages):
            trainer_amp = True
    if getattr(precision, "scaler", None) is None and not trainer_amp:
        return True
    if not getattr(can_clip_gradients, "warned", False):
        can_clip_gradients.warned = True
        name = type(optimizer).__name__
        why = "unscales its own gradients (fused=True); Lightning cannot clip them here"
        warnings.warn(f"amp-clipfix: gradient clipping skipped: {name} {why}", stacklevel=2)
    return False
'''
