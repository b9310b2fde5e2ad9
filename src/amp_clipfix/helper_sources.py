"""The source of the functions the unscale fix inserts into a user's module (DESIGN.md §1b).

A floor module, like strategies.py: the fix inserts this text (fixes/codemods/unscale_helper.py)
and the rule pages show it in their examples (rules/), so both read the one copy. Kept as text so
that the inserted code is exactly what the runtime tests run.
"""

from __future__ import annotations

FABRIC_HELPER_SOURCE = '''\
def clip_gradients_unscaled(
    fabric,
    module,
    optimizer,
    clip_val=None,
    max_norm=None,
    norm_type=2.0,
    error_if_nonfinite=None,
):
    """`fabric.clip_gradients(...)` that also clips a fused optimizer under a
    GradScaler (inserted by amp-clipfix): unscale with the run's scaler, then
    clip with torch. Under a scaler a non-finite norm is an overflow step the
    scaler skips: by default it raises only without a scaler.
    """
    import torch

    scaler = getattr(fabric.strategy.precision, "scaler", None)
    if error_if_nonfinite is None:
        error_if_nonfinite = scaler is None
    inner = getattr(optimizer, "optimizer", optimizer)  # Fabric's wrapper
    if not getattr(inner, "_step_supports_amp_scaling", False):
        limits = (clip_val, max_norm, norm_type, error_if_nonfinite)
        return fabric.clip_gradients(module, optimizer, *limits)
    strategy = type(fabric.strategy)
    names = [cls.__name__ for cls in strategy.__mro__]
    sharded = ("FSDP", "DeepSpeed", "Sharded", "ModelParallel")
    if any(word in name for name in names for word in sharded):
        why = "sharded strategies clip differently; use fused=False instead"
        name = strategy.__name__
        raise RuntimeError(f"amp-clipfix does not support {name}: {why}")
    if clip_val is not None and max_norm is not None:
        raise ValueError("Only one of `clip_val` or `max_norm` can be set")
    if clip_val is None and max_norm is None:
        raise ValueError("You have to specify either `clip_val` or `max_norm`")
    states = getattr(scaler, "_per_optimizer_states", {})
    stage = getattr(states.get(id(inner), {}).get("stage"), "name", "")
    if scaler is not None and stage != "UNSCALED":  # once per step
        scaler.unscale_(inner)
    parameters = [p for group in inner.param_groups for p in group["params"]]
    if clip_val is not None:
        torch.nn.utils.clip_grad_value_(parameters, clip_value=clip_val)
        return None
    clip = torch.nn.utils.clip_grad_norm_
    return clip(parameters, max_norm, norm_type, error_if_nonfinite)
'''

MODULE_HELPER_SOURCE = '''\
def clip_module_gradients_unscaled(
    module,
    optimizer,
    gradient_clip_val=None,
    gradient_clip_algorithm=None,
):
    """`module.clip_gradients(...)` that also clips a fused optimizer under
    mixed precision (inserted by amp-clipfix): unscale with the run's
    GradScaler (if any), then clip with torch. In manual optimization, before
    `step()`, another optimizer's gradients are still scaled: they are clipped
    to the value times the scale. Any other call goes to
    `module.clip_gradients`.
    """
    import torch

    inner = getattr(optimizer, "optimizer", optimizer)  # a LightningOptimizer
    trainer = module.trainer
    scaler = getattr(trainer.precision_plugin, "scaler", None)
    fused = getattr(inner, "_step_supports_amp_scaling", False)
    value, algorithm = gradient_clip_val, gradient_clip_algorithm
    states = getattr(scaler, "_per_optimizer_states", {})
    stage = getattr(states.get(id(inner), {}).get("stage"), "name", "")
    unscaled = stage == "UNSCALED"
    scale = 1.0
    if not fused:
        if scaler is None or module.automatic_optimization or unscaled:
            module.clip_gradients(optimizer, value, algorithm)
            return
        scale = float(scaler.get_scale())
    strategy = type(trainer.strategy)
    names = [cls.__name__ for cls in strategy.__mro__]
    sharded = ("FSDP", "DeepSpeed", "Sharded", "ModelParallel")
    if any(word in name for name in names for word in sharded):
        why = "sharded strategies clip differently; use fused=False instead"
        name = strategy.__name__
        raise RuntimeError(f"amp-clipfix does not support {name}: {why}")
    if value is None:
        value = trainer.gradient_clip_val or 0.0
    algorithm = algorithm or trainer.gradient_clip_algorithm or "norm"
    algorithm = str(getattr(algorithm, "value", algorithm)).lower()
    if algorithm not in ("norm", "value"):
        raise ValueError(f"gradient_clip_algorithm {algorithm!r} is unknown")
    if value <= 0:
        return
    if fused and scaler is not None and not unscaled:  # once per step
        scaler.unscale_(inner)
    parameters = [p for group in inner.param_groups for p in group["params"]]
    if algorithm == "value":
        torch.nn.utils.clip_grad_value_(parameters, clip_value=value * scale)
    else:
        torch.nn.utils.clip_grad_norm_(parameters, value * scale)
'''
