"""Hooks on Lightning: Fabric, Trainer, LightningModule."""

from __future__ import annotations

import functools
from typing import Any

from .core import (
    LIGHTNING_MODULE_CLASSES,
    STATE,
    emit,
    error_record,
    module_file,
    scaler_view,
    unwrap_optimizer,
    user_frames,
)


def busy(original: Any, where: str, before: Any = None, after: Any = None) -> Any:
    """A Lightning method: its nested torch calls are not recorded again; exceptions are."""

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        record = before(self, *args, **kwargs) if before is not None else None
        outer, STATE.outer = STATE.outer, record
        STATE.busy += 1
        try:
            result = original(self, *args, **kwargs)
        except BaseException as error:
            STATE.busy -= 1
            STATE.outer = outer
            error_record(error, where, record.get("frames") if record else user_frames())
            if record is not None:
                record["error"] = type(error).__name__
                emit(record.pop("event"), **record)
            raise
        STATE.busy -= 1
        STATE.outer = outer
        if record is not None:
            emit(record.pop("event"), **record)
        if after is not None:
            after(self, *args, **kwargs)
        return result

    return method


def precision_view(plugin: Any) -> dict[str, Any]:
    scaler = getattr(plugin, "scaler", None)
    return {
        "plugin": type(plugin).__name__,
        "precision": str(getattr(plugin, "precision", "")),
        "scaler": scaler is not None and bool(scaler.is_enabled()),
    }


def install_fabric(module: Any) -> None:
    fabric = module.Fabric

    def clip_before(
        self: Any,
        model: Any,
        optimizer: Any,
        clip_val: Any = None,
        max_norm: Any = None,
        norm_type: Any = 2.0,
        error_if_nonfinite: bool = True,
    ) -> dict[str, Any]:
        inner = unwrap_optimizer(optimizer)
        return {
            "event": "fabric_clip",
            "optimizer": id(inner),
            "handles_unscaling": bool(getattr(inner, "_step_supports_amp_scaling", False)),
            "clip_val": clip_val,
            "max_norm": max_norm,
            "error_if_nonfinite": bool(error_if_nonfinite),
            **precision_view(self._precision),
            "frames": user_frames(2),
        }

    def backward_before(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    fabric.clip_gradients = busy(fabric.clip_gradients, "fabric.clip_gradients", clip_before)
    init = fabric.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        emit(
            "fabric",
            arguments={k: repr(v)[:120] for k, v in kwargs.items()},
            strategy=type(self.strategy).__name__,
            **precision_view(self._precision),
            frames=user_frames(),
        )

    fabric.__init__ = __init__
    fabric.backward = busy(fabric.backward, "fabric.backward", backward_before)


def install_trainer(module: Any) -> None:
    trainer = module.Trainer
    init = trainer.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        frames = user_frames()
        try:
            init(self, *args, **kwargs)
        except BaseException as error:
            error_record(error, "Trainer", frames)
            raise
        emit(
            "trainer",
            arguments={k: repr(v)[:120] for k, v in kwargs.items()},
            strategy=type(self.strategy).__name__,
            gradient_clip_val=self.gradient_clip_val,
            gradient_clip_algorithm=str(self.gradient_clip_algorithm),
            **precision_view(self.precision_plugin),
            frames=frames,
        )

    trainer.__init__ = __init__
    for name in ("fit", "validate", "test", "predict"):
        original = getattr(trainer, name, None)
        if original is not None:
            setattr(trainer, name, wrap_fit(original, name))


def wrap_fit(original: Any, name: str) -> Any:
    @functools.wraps(original)
    def fit(self: Any, model: Any = None, *args: Any, **kwargs: Any) -> Any:
        frames = user_frames()
        if model is not None:
            cls = type(model)
            emit(
                "fit",
                module=cls.__name__,
                file=module_file(cls),
                automatic_optimization=bool(getattr(model, "automatic_optimization", True)),
                frames=frames,
            )
        try:
            return original(self, model, *args, **kwargs)
        except BaseException as error:
            error_record(error, f"Trainer.{name}", frames)
            raise

    return fit


def install_module(module: Any) -> None:
    cls = module.LightningModule
    LIGHTNING_MODULE_CLASSES.append(cls)

    def clip_before(
        self: Any,
        optimizer: Any,
        gradient_clip_val: Any = None,
        gradient_clip_algorithm: Any = None,
    ) -> dict[str, Any]:
        inner = unwrap_optimizer(optimizer)
        trainer = getattr(self, "_trainer", None)
        plugin = getattr(trainer, "precision_plugin", None)
        return {
            "event": "module_clip",
            "module": type(self).__name__,
            "file": module_file(type(self)),
            "automatic_optimization": bool(getattr(self, "automatic_optimization", True)),
            "optimizer": id(inner),
            "handles_unscaling": bool(getattr(inner, "_step_supports_amp_scaling", False)),
            "clip_val": gradient_clip_val,
            "algorithm": str(gradient_clip_algorithm),
            "scaler_state": scaler_view(inner),
            **(precision_view(plugin) if plugin is not None else {}),
            "frames": user_frames(2),
        }

    cls.clip_gradients = busy(cls.clip_gradients, "LightningModule.clip_gradients", clip_before)
    manual = cls.manual_backward

    @functools.wraps(manual)
    def manual_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        STATE.manual_backward += 1
        try:
            return manual(self, *args, **kwargs)
        finally:
            STATE.manual_backward -= 1

    cls.manual_backward = manual_backward
