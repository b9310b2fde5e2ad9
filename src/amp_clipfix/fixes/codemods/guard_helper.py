"""The functions that the guard fix inserts into a user's module.

`can_clip_gradients` decides whether Lightning can clip; `unclipped_gradient_norm` stands in for
the result of a Fabric clip the guard skips, so code that uses it (`norm.item()`, `norm > x`,
logging) keeps working. Both are kept as source text so that the inserted code is exactly what the
runtime tests exercise. They import nothing private and nothing from Lightning, so they work with
every 2.x release.
"""

from __future__ import annotations

from amp_clipfix.analysis import names

HELPER_NAME = names.GUARD_HELPER

HELPER_SOURCE = '''\
def can_clip_gradients(precision, optimizer):
    """Whether Lightning can clip `optimizer` (inserted by amp-clipfix)."""
    # Lightning cannot clip a fused optimizer (it unscales its own gradients)
    # while a GradScaler is in play; the Trainer's MixedPrecision plugin
    # refuses even without one (<= 2.6.6). `precision` is a precision plugin,
    # a Fabric or a Trainer. Warns once when it says no.
    import warnings

    precision = getattr(precision, "precision_plugin", precision)
    strategy = getattr(precision, "strategy", None)
    precision = getattr(strategy, "precision", precision)
    if not getattr(optimizer, "_step_supports_amp_scaling", False):
        return True
    plugins = ("MixedPrecision", "MixedPrecisionPlugin")
    plugins += ("NativeMixedPrecisionPlugin",)
    packages = ("lightning.pytorch.", "pytorch_lightning.")
    trainer_amp = False
    for cls in type(precision).__mro__:
        if cls.__name__ in plugins and cls.__module__.startswith(packages):
            trainer_amp = True
    if getattr(precision, "scaler", None) is None and not trainer_amp:
        return True
    if not getattr(can_clip_gradients, "warned", False):
        can_clip_gradients.warned = True
        name = type(optimizer).__name__
        why = "unscales its own gradients (fused=True); Lightning cannot clip"
        message = f"amp-clipfix: gradient clipping skipped: {name} {why}"
        warnings.warn(message, stacklevel=2)
    return False
'''

NORM_HELPER_NAME = "unclipped_gradient_norm"

NORM_HELPER_SOURCE = '''\
def unclipped_gradient_norm(
    fabric,
    module,
    optimizer,
    clip_val=None,
    max_norm=None,
    norm_type=2.0,
    error_if_nonfinite=True,
):
    """What `fabric.clip_gradients` returns, without clipping (inserted by
    amp-clipfix): the total norm of the unscaled gradients for `max_norm`,
    None for `clip_val`, where `can_clip_gradients` skips the clip. A
    non-finite norm is returned, not raised: nothing is clipped with it.
    """
    import torch

    if max_norm is None:
        return None
    groups = optimizer.param_groups
    grads = [p.grad for g in groups for p in g["params"] if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    if hasattr(torch.nn.utils, "get_total_norm"):  # torch >= 2.6
        total = torch.nn.utils.get_total_norm(grads, norm_type)
    else:
        norm = torch.linalg.vector_norm
        norms = [norm(g.detach(), norm_type) for g in grads]
        norms = torch.stack([n.to(norms[0].device) for n in norms])
        total = norm(norms, norm_type)
    # A fused optimizer unscales inside step(): until then the gradients carry
    # the loss scale.
    precision = getattr(getattr(fabric, "strategy", None), "precision", None)
    scaler = getattr(precision, "scaler", None)
    if scaler is not None and scaler.is_enabled():
        total = total / scaler.get_scale()
    return total
'''
