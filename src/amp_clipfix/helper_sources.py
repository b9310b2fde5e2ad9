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
    """`fabric.clip_gradients(...)`, which also clips an optimizer that unscales its own
    gradients (fused=True) under a GradScaler (inserted by amp-clipfix).

    Lightning refuses to unscale such an optimizer for clipping; torch can: unscale it with the
    run's own GradScaler, then clip, and the scaler's step passes no scale to the fused kernel.
    Under a GradScaler a non-finite norm is an overflow step the scaler skips, so it never
    raises there (`error_if_nonfinite` defaults to whether there is no scaler).
    Returns what `fabric.clip_gradients` returns: the total norm for `max_norm`, else None.
    """
    import torch

    scaler = getattr(fabric.strategy.precision, "scaler", None)
    if error_if_nonfinite is None:
        error_if_nonfinite = scaler is None
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
    if scaler is not None:
        scaler.unscale_(inner)
    parameters = [p for group in inner.param_groups for p in group["params"]]
    if clip_val is not None:
        torch.nn.utils.clip_grad_value_(parameters, clip_value=clip_val)
        return None
    return torch.nn.utils.clip_grad_norm_(
        parameters, max_norm, norm_type=norm_type, error_if_nonfinite=error_if_nonfinite
    )
'''

MODULE_HELPER_SOURCE = '''\
def clip_module_gradients_unscaled(
    module, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
):
    """`module.clip_gradients(...)`, which also clips an optimizer that unscales its own
    gradients (fused=True) under mixed precision (inserted by amp-clipfix).

    Lightning refuses to clip such an optimizer; torch can: unscale it with the run's own
    GradScaler (when there is one), then clip, and the scaler's step passes no scale to the fused
    kernel. In manual optimization, before `optimizer.step()`, the gradients of any other
    optimizer are still scaled (Lightning unscales them inside `step`): they are clipped to the
    value times the scale. Every other call goes to `module.clip_gradients` unchanged.
    """
    import torch

    inner = getattr(optimizer, "optimizer", optimizer)  # unwrap a LightningOptimizer
    trainer = module.trainer
    scaler = getattr(trainer.precision_plugin, "scaler", None)
    fused = getattr(inner, "_step_supports_amp_scaling", False)
    scale = 1.0
    if not fused:
        states = getattr(scaler, "_per_optimizer_states", {})
        stage = states[id(inner)].get("stage") if id(inner) in states else None
        unscaled = getattr(stage, "name", "") == "UNSCALED"  # Lightning unscaled it already
        if scaler is None or module.automatic_optimization or unscaled:
            module.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)
            return
        scale = float(scaler.get_scale())
    strategy = type(trainer.strategy)
    sharded = ("FSDP", "DeepSpeed", "Sharded", "ModelParallel")
    if any(word in cls.__name__ for cls in strategy.__mro__ for word in sharded):
        raise RuntimeError(
            f"clip_module_gradients_unscaled (amp-clipfix) does not support "
            f"{strategy.__name__}: sharded strategies clip differently; use fused=False instead"
        )
    if gradient_clip_val is None:
        gradient_clip_val = trainer.gradient_clip_val or 0.0
    algorithm = gradient_clip_algorithm or trainer.gradient_clip_algorithm or "norm"
    algorithm = str(getattr(algorithm, "value", algorithm)).lower()
    if algorithm not in ("norm", "value"):
        raise ValueError(f"gradient_clip_algorithm {algorithm!r} is not 'norm' or 'value'")
    if gradient_clip_val <= 0:
        return
    if fused and scaler is not None:
        scaler.unscale_(inner)
    parameters = [p for group in inner.param_groups for p in group["params"]]
    if algorithm == "value":
        torch.nn.utils.clip_grad_value_(parameters, clip_value=gradient_clip_val * scale)
    else:
        torch.nn.utils.clip_grad_norm_(parameters, gradient_clip_val * scale)
'''
