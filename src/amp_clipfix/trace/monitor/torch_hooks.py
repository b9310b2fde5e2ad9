"""Hooks on torch: optimizers, GradScaler, the clip functions, Tensor.backward."""

from __future__ import annotations

import functools
import sys
from typing import Any

from .core import (
    COUNTS,
    HUGE_SCALE,
    LIGHTNING_MODULE_CLASSES,
    LIMIT,
    OPTIMIZERS,
    SCALED,
    SCALERS,
    STATE,
    emit,
    error_record,
    is_user_file,
    manual_module,
    maybe_stop,
    scaler_view,
    stage_of,
    user_frames,
)


def optimizers_of(parameters: list[Any]) -> list[Any]:
    """The live optimizers holding any of these parameters (by identity)."""
    wanted = {id(p) for p in parameters}
    found = []
    for optimizer in list(OPTIMIZERS.values()):
        ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if ids & wanted:
            found.append(optimizer)
    return found


def optimizer_built(original: Any) -> Any:
    @functools.wraps(original)
    def __init__(self: Any, params: Any, defaults: Any, *args: Any, **kwargs: Any) -> None:
        original(self, params, defaults, *args, **kwargs)
        if id(self) in OPTIMIZERS:
            return
        OPTIMIZERS[id(self)] = self
        emit(
            "optimizer",
            id=id(self),
            cls=type(self).__name__,
            module=type(self).__module__,
            fused=bool(defaults.get("fused")) if isinstance(defaults, dict) else None,
            foreach=defaults.get("foreach") if isinstance(defaults, dict) else None,
            params=sum(len(group["params"]) for group in self.param_groups),
            frames=user_frames(),
        )

    return __init__


def wrap_clip(original: Any, name: str) -> Any:
    @functools.wraps(original)
    def clip(parameters: Any, *args: Any, **kwargs: Any) -> Any:
        import torch  # already imported: this is torch's own function

        params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        bound = args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value"))
        if STATE.busy:  # a library's clip (Lightning's): its caller's record gets the numbers
            result = original(params, *args, **kwargs)
            if STATE.outer is not None:
                STATE.outer["bound"] = float(bound) if bound is not None else None
                if result is not None:
                    STATE.outer["total_norm"] = float(result)
                if LIMIT["norms"]:
                    STATE.outer["norm_after"] = norm_of(params)
            return result
        optimizers = optimizers_of(params)
        record: dict[str, Any] = {
            "function": name,
            "bound": float(bound) if bound is not None else None,
            "optimizers": [id(o) for o in optimizers],
            "scalers": [scaler_view(o) for o in optimizers],
            "manual_module": manual_module(),
            "frames": user_frames(),
        }
        try:
            result = original(params, *args, **kwargs)
        except BaseException as error:
            error_record(error, name, record["frames"])
            raise
        if result is not None:
            record["total_norm"] = float(result)
        if LIMIT["norms"]:
            record["norm_after"] = norm_of(params)
        emit("clip", **record)
        return result

    return clip


def norm_of(params: list[Any]) -> float | None:
    """The 2-norm of the parameters' gradients as they are now (one more reduction)."""
    import torch

    grads = [p.grad.detach().float() for p in params if p.grad is not None]
    if not grads:
        return None
    norms = torch.stack([torch.linalg.vector_norm(g) for g in grads])
    return float(torch.linalg.vector_norm(norms))


def found_inf(scaler: Any, optimizer: Any, stepped: bool) -> bool:
    """Whether the scaler skipped this step for an overflow: its own found_inf (a fused
    optimizer's step runs and skips the update inside the kernel)."""
    state = scaler._per_optimizer_states.get(id(optimizer)) or {}  # noqa: SLF001
    found = state.get("found_inf_per_device") or {}
    if not found:
        return not stepped
    return any(float(value) > 0 for value in found.values())


def wrap_scaler(cls: Any) -> None:
    init, scale, unscale, step, update = (
        cls.__init__,
        cls.scale,
        cls.unscale_,
        cls.step,
        cls.update,
    )

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        SCALERS[id(self)] = self
        emit(
            "scaler",
            id=id(self),
            enabled=bool(self.is_enabled()),
            init_scale=float(getattr(self, "_init_scale", 0.0) or 0.0),
            frames=user_frames(),
        )

    @functools.wraps(scale)
    def scale_(self: Any, outputs: Any) -> Any:
        SCALERS.setdefault(id(self), self)
        if self.is_enabled():
            SCALED.add(id(self))
        return scale(self, outputs)

    @functools.wraps(unscale)
    def unscale_(self: Any, optimizer: Any) -> Any:
        before = stage_of(self, optimizer)
        try:
            return unscale(self, optimizer)
        except BaseException as error:
            error_record(error, "unscale_", user_frames())
            raise
        finally:
            if not STATE.in_scaler_step:  # step()'s own unscale_ is part of the step
                emit(
                    "unscale",
                    scaler=id(self),
                    optimizer=id(optimizer),
                    stage=before,
                    frames=user_frames(),
                )

    @functools.wraps(step)
    def step_(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        STATE.in_scaler_step, STATE.stepped = True, False
        try:
            return step(self, optimizer, *args, **kwargs)
        finally:
            STATE.in_scaler_step = False
            COUNTS["steps"] += 1
            emit(
                "step",
                via="scaler",
                scaler=id(self),
                optimizer=id(optimizer),
                skipped=found_inf(self, optimizer, STATE.stepped),
                scale=float(self.get_scale()) if self.is_enabled() else 1.0,
                number=COUNTS["steps"],
            )

    @functools.wraps(update)
    def update_(self: Any, new_scale: Any = None) -> Any:
        SCALED.discard(id(self))
        COUNTS["updates"] += 1
        forced = None
        if LIMIT["overflow"] and self.is_enabled() and new_scale is None:
            if LIMIT["overflow_state"] == 0:  # after the first step: a huge scale
                LIMIT["overflow_state"] = 1
                LIMIT["saved_scale"] = float(self.get_scale())
                new_scale, forced = HUGE_SCALE, "overflow"
            elif LIMIT["overflow_state"] == 1:  # after the overflow step: the scale back
                LIMIT["overflow_state"] = 2
                new_scale, forced = LIMIT["saved_scale"], "restore"
        result = update(self, new_scale) if new_scale is not None else update(self)
        emit("update", scaler=id(self), scale=float(self.get_scale()), forced=forced)
        maybe_stop()
        return result

    cls.__init__, cls.scale, cls.unscale_, cls.step, cls.update = (
        __init__,
        scale_,
        unscale_,
        step_,
        update_,
    )


def step_post_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    if STATE.in_scaler_step:
        STATE.stepped = True
        return
    COUNTS["steps"] += 1
    emit("step", via="optimizer", optimizer=id(optimizer), skipped=False, number=COUNTS["steps"])
    if not SCALED:
        maybe_stop()


def wrap_backward(original: Any) -> Any:
    @functools.wraps(original)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not STATE.busy and not STATE.manual_backward and LIGHTNING_MODULE_CLASSES:
            caller = sys._getframe(1).f_code.co_filename  # noqa: SLF001
            module = manual_module() if is_user_file(caller) else None
            if module is not None:
                emit("backward", via="plain", module=module, frames=user_frames())
        try:
            return original(self, *args, **kwargs)
        except BaseException as error:
            error_record(error, "backward", user_frames())
            raise

    return backward


def install_torch(torch: Any) -> None:
    import torch.optim.optimizer as optimizer_module

    optimizer = torch.optim.Optimizer
    optimizer.__init__ = optimizer_built(optimizer.__init__)
    optimizer_module.register_optimizer_step_post_hook(step_post_hook)
    import torch.amp.grad_scaler as grad_scaler
    import torch.nn.utils.clip_grad as clip_grad

    wrap_scaler(grad_scaler.GradScaler)
    for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
        original = getattr(clip_grad, name, None)
        if original is None:
            continue
        wrapped = wrap_clip(original, name)
        for module in (clip_grad, torch.nn.utils):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapped)
    torch.Tensor.backward = wrap_backward(torch.Tensor.backward)
