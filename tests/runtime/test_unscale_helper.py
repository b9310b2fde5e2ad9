"""The helpers the unscale fix inserts, on real torch objects: what they hand to Lightning, what
they clip themselves, and the clear error under a sharded strategy they cannot serve.

The end-to-end proof (real Fabric and Trainer runs, parameters against a fused=False reference)
is in test_runtime_fix.py; these pin the branches a training run does not reach.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from amp_clipfix.fixes.codemods.unscale_helper import (
    FABRIC_HELPER,
    FABRIC_HELPER_SOURCE,
    MODULE_HELPER,
    MODULE_HELPER_SOURCE,
)

# Collected where torch is not installed too: a quick run there skips this file, saying why.
torch = pytest.importorskip(
    "torch", reason="needs torch: not installed here (pip install -e . --group test installs it)"
)


def helper(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace[name]


class SingleDeviceStrategy:
    """Named like Lightning's: the helpers read strategy class names, nothing else."""


class FSDPStrategy:
    pass


class Recorder:
    """Stands in for a Fabric or a LightningModule: records what reaches Lightning's clipping."""

    def __init__(self, strategy: object, scaler: object = None) -> None:
        self.calls: list[tuple] = []
        self.strategy = strategy
        self.strategy.precision = SimpleNamespace(scaler=scaler)
        precision_plugin = SimpleNamespace(scaler=scaler)
        self.trainer = SimpleNamespace(
            strategy=strategy,
            precision_plugin=precision_plugin,
            gradient_clip_val=None,
            gradient_clip_algorithm=None,
        )

    def clip_gradients(self, *args: object) -> str:
        self.calls.append(args)
        return "lightning's result"


def optimizer_with_gradients(fused: bool) -> torch.optim.Optimizer:
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4)
    layer(torch.randn(8, 4)).pow(2).sum().mul(100).backward()
    return torch.optim.AdamW(layer.parameters(), lr=1e-3, fused=fused)


def grad_norm(optimizer: torch.optim.Optimizer) -> float:
    grads = [p.grad for group in optimizer.param_groups for p in group["params"]]
    return float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))


def test_fabric_helper_hands_an_unfused_optimizer_to_fabric_unchanged() -> None:
    clip = helper(FABRIC_HELPER_SOURCE, FABRIC_HELPER)
    fabric = Recorder(SingleDeviceStrategy())
    optimizer = optimizer_with_gradients(fused=False)
    assert clip(fabric, "model", optimizer, max_norm=1.0) == "lightning's result"
    assert fabric.calls == [("model", optimizer, None, 1.0, 2.0, True)]


def test_fabric_helper_clips_a_fused_optimizer_and_returns_the_total_norm() -> None:
    clip = helper(FABRIC_HELPER_SOURCE, FABRIC_HELPER)
    fabric = Recorder(SingleDeviceStrategy())  # no scaler: bf16-mixed or 32-true
    optimizer = optimizer_with_gradients(fused=True)
    before = grad_norm(optimizer)
    wrapped = SimpleNamespace(optimizer=optimizer)  # Fabric's wrapper, unwrapped via .optimizer
    total = clip(fabric, "model", wrapped, max_norm=1.0)
    assert fabric.calls == []
    assert float(total) == pytest.approx(before)
    assert grad_norm(optimizer) == pytest.approx(1.0, rel=1e-5)
    assert clip(fabric, "model", wrapped, clip_val=0.01) is None
    grads = [p.grad for group in optimizer.param_groups for p in group["params"]]
    assert max(float(g.abs().max()) for g in grads) <= 0.01


def test_fabric_helper_unscales_with_the_runs_scaler_first() -> None:
    clip = helper(FABRIC_HELPER_SOURCE, FABRIC_HELPER)
    unscaled = []
    scaler = SimpleNamespace(unscale_=unscaled.append)
    optimizer = optimizer_with_gradients(fused=True)
    clip(Recorder(SingleDeviceStrategy(), scaler), "model", optimizer, max_norm=1.0)
    assert unscaled == [optimizer]


def test_fabric_helper_refuses_a_sharded_strategy_clearly() -> None:
    clip = helper(FABRIC_HELPER_SOURCE, FABRIC_HELPER)
    with pytest.raises(RuntimeError, match="does not support FSDPStrategy: sharded strategies"):
        clip(Recorder(FSDPStrategy()), "model", optimizer_with_gradients(fused=True), max_norm=1)


def test_module_helper_hands_others_to_the_module_and_refuses_sharding() -> None:
    clip = helper(MODULE_HELPER_SOURCE, MODULE_HELPER)
    module = Recorder(SingleDeviceStrategy())
    optimizer = optimizer_with_gradients(fused=False)
    clip(module, optimizer, 0.5, "value")
    assert module.calls == [(optimizer, 0.5, "value")]
    with pytest.raises(RuntimeError, match="does not support FSDPStrategy"):
        clip(Recorder(FSDPStrategy()), optimizer_with_gradients(fused=True), 1.0, "norm")


def test_module_helper_clips_by_the_trainers_settings_when_given_none() -> None:
    clip = helper(MODULE_HELPER_SOURCE, MODULE_HELPER)
    module = Recorder(SingleDeviceStrategy())
    module.trainer.gradient_clip_val = 0.01
    module.trainer.gradient_clip_algorithm = SimpleNamespace(value="value")  # Lightning's enum
    optimizer = optimizer_with_gradients(fused=True)
    clip(module, optimizer)
    grads = [p.grad for group in optimizer.param_groups for p in group["params"]]
    assert module.calls == [] and max(float(g.abs().max()) for g in grads) <= 0.01
    module.trainer.gradient_clip_val = None
    before = grad_norm(optimizer)
    clip(module, optimizer)  # no clip value anywhere: nothing to do, as in Lightning
    assert grad_norm(optimizer) == before


def test_fabric_helper_never_raises_on_an_overflow_step_under_a_scaler() -> None:
    """A GradScaler skips a step whose gradients overflowed: the helper must not raise there
    (Fabric's own default, error_if_nonfinite=True, does), and keeps the default without one."""
    clip = helper(FABRIC_HELPER_SOURCE, FABRIC_HELPER)
    scaler = SimpleNamespace(unscale_=lambda optimizer: None)
    fabric = Recorder(SingleDeviceStrategy(), scaler)
    optimizer = optimizer_with_gradients(fused=False)
    clip(fabric, "model", optimizer, max_norm=1.0)
    assert fabric.calls == [("model", optimizer, None, 1.0, 2.0, False)]
    fused = optimizer_with_gradients(fused=True)
    for group in fused.param_groups:
        for parameter in group["params"]:
            parameter.grad.fill_(float("inf"))
    total = clip(fabric, "model", fused, max_norm=1.0)  # no RuntimeError: non-finite norm
    assert not torch.isfinite(total)


def test_module_helper_in_manual_optimization_clips_scaled_gradients_to_value_times_scale() -> None:
    """Between manual_backward and step the gradients of a non-fused optimizer are still scaled
    (Lightning unscales inside step): the helper clips them to the value times the scale, and
    hands the call to Lightning once the scaler has unscaled them."""
    clip = helper(MODULE_HELPER_SOURCE, MODULE_HELPER)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler.scale(layer(torch.randn(8, 4)).pow(2).sum().mul(100)).backward()
    module = Recorder(SingleDeviceStrategy(), scaler)
    module.automatic_optimization = False
    clip(module, optimizer, 1.0, "norm")
    assert module.calls == []
    assert grad_norm(optimizer) == pytest.approx(1024.0, rel=1e-5)
    scaler.unscale_(optimizer)
    assert grad_norm(optimizer) == pytest.approx(1.0, rel=1e-5)
    clip(module, optimizer, 1.0, "norm")  # unscaled now (as in on_before_optimizer_step)
    assert module.calls == [(optimizer, 1.0, "norm")]
