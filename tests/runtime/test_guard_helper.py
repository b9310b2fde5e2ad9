"""The inserted `can_clip_gradients` helper, checked against real Lightning 2.6.6 objects on CPU.

Every answer of the helper is compared with what Lightning really does: where it says False,
Lightning's own clip raises (or, in one documented case, would clip still-scaled gradients); where
it says True, Lightning's clip goes through.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from amp_clipfix.fixes.codemods.guard_helper import (
    HELPER_NAME,
    HELPER_SOURCE,
    NORM_HELPER_NAME,
    NORM_HELPER_SOURCE,
)

try:
    import torch
    from lightning.fabric import Fabric
    from lightning.fabric.plugins.precision import FSDPPrecision as FabricFSDPPrecision
    from lightning.fabric.plugins.precision import MixedPrecision as FabricMixedPrecision
    from lightning.fabric.plugins.precision import Precision as FabricPrecision
    from lightning.fabric.strategies import SingleDeviceStrategy
    from lightning.pytorch import Trainer
    from lightning.pytorch.core.optimizer import LightningOptimizer
    from lightning.pytorch.plugins.precision import FSDPPrecision as TrainerFSDPPrecision
    from lightning.pytorch.plugins.precision import MixedPrecision as TrainerMixedPrecision
    from lightning.pytorch.plugins.precision import Precision as TrainerPrecision
    from lightning.pytorch.utilities import GradClipAlgorithmType
    from torch import nn
    from torch.optim import Optimizer
except ImportError as error:  # fail, never skip: these tests are the proof the helper is right
    MISSING = f"test_guard_helper needs torch==2.13.0 and lightning==2.6.6 ({error})"
else:
    MISSING = ""
NOT_INSTALLED = [name for name in ("torch", "lightning") if importlib.util.find_spec(name) is None]
if NOT_INSTALLED:  # a quick run skips this file, saying why; one that selects it fails on that
    missing = " and ".join(NOT_INSTALLED)
    reason = f"needs {missing}: not installed here (pip install -e . --group test installs it)"
    pytest.skip(reason, allow_module_level=True)
if MISSING:
    pytest.fail(MISSING, pytrace=False)

CanClip = Callable[[Any, Any], bool]

# FSDPPrecision("16-mixed") builds a CUDA ShardedGradScaler, which torch disables on a CPU.
pytestmark = pytest.mark.filterwarnings("ignore:torch.cuda.amp.GradScaler is enabled")

SKIP_WARNING = "amp-clipfix: gradient clipping skipped"
FABRIC_ERROR = "Gradient clipping is not implemented for optimizers handling the unscaling"
TRAINER_ERROR = "does not allow for gradient clipping because it performs unscaling"


@pytest.fixture
def can_clip() -> CanClip:
    """A fresh copy of the helper per test, so its "warned once" state starts clean."""
    namespace: dict[str, Any] = {}
    exec(HELPER_SOURCE, namespace)
    return namespace[HELPER_NAME]


def model_and_optimizer(fused: bool, name: str = "AdamW") -> tuple[nn.Module, Optimizer]:
    """A tiny model with a torch optimizer; fused=True works on CPU in torch 2.13."""
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    optimizer = getattr(torch.optim, name)(model.parameters(), lr=1e-3, fused=fused)
    return model, optimizer


def cpu_scaler() -> torch.amp.GradScaler:
    """The GradScaler a CUDA run would get; on a CPU it has to be passed explicitly."""
    return torch.amp.GradScaler("cpu")


def loss_of(model: nn.Module) -> torch.Tensor:
    """A small loss: scaled by 65536 under fp16 autocast, its gradients must stay finite."""
    return model(torch.randn(8, 4)).pow(2).mean()


def answer_and_warnings(can_clip: CanClip, precision: Any, optimizer: Any) -> tuple[bool, int]:
    """The helper's answer and how many skip warnings it emitted for it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = can_clip(precision, optimizer)
    return answer, sum(SKIP_WARNING in str(w.message) for w in caught)


def quiet_trainer(**kwargs: Any) -> Trainer:
    """A CPU Trainer that writes nothing and prints as little as Lightning allows."""
    return Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


# Fabric-side plugins: `Strategy.clip_gradients_norm`, which `fabric.clip_gradients` calls,
# unscales first and raises NotImplementedError there for a fused optimizer with a scaler.
# FSDPPrecision cannot take an explicit scaler in 2.6.6 (its __init__ reads `self.precision` before
# setting it, so any scaler raises "does not use a scaler"); "16-mixed" builds a ShardedGradScaler
# for "cuda" that is disabled on CPU but still not None, which is all that Lightning's check reads.
# Running it under a real FSDPStrategy needs torch.distributed, so a SingleDeviceStrategy hosts it.
FABRIC_PLUGINS: dict[str, Callable[[], Any]] = {
    "mixed-16-scaler": lambda: FabricMixedPrecision("16-mixed", "cpu", cpu_scaler()),
    "mixed-bf16": lambda: FabricMixedPrecision("bf16-mixed", "cpu"),
    "precision-32-true": FabricPrecision,
    "fsdp-16-mixed": lambda: FabricFSDPPrecision("16-mixed"),
    "fsdp-bf16-mixed": lambda: FabricFSDPPrecision("bf16-mixed"),
}
FABRIC_EXPECTED = {  # (plugin, fused) -> can clip
    ("mixed-16-scaler", True): False,
    ("mixed-16-scaler", False): True,
    ("mixed-bf16", True): True,
    ("mixed-bf16", False): True,
    ("precision-32-true", True): True,
    ("precision-32-true", False): True,
    ("fsdp-16-mixed", True): False,
    ("fsdp-16-mixed", False): True,
    ("fsdp-bf16-mixed", True): True,
    ("fsdp-bf16-mixed", False): True,
}


@pytest.mark.parametrize(
    ("plugin", "fused"), list(FABRIC_EXPECTED), ids=[f"{p}-fused={f}" for p, f in FABRIC_EXPECTED]
)
def test_fabric_plugin(can_clip: CanClip, plugin: str, fused: bool) -> None:
    """The helper says False exactly where Fabric's own clip raises."""
    precision = FABRIC_PLUGINS[plugin]()
    model, optimizer = model_and_optimizer(fused)
    expected = FABRIC_EXPECTED[plugin, fused]

    assert answer_and_warnings(can_clip, precision, optimizer) == (expected, int(not expected))

    strategy = SingleDeviceStrategy(device=torch.device("cpu"), precision=precision)
    strategy.backward(loss_of(model), model)
    if expected:
        strategy.clip_gradients_norm(model, optimizer, max_norm=1.0)
    else:
        with pytest.raises(NotImplementedError, match=FABRIC_ERROR):
            strategy.clip_gradients_norm(model, optimizer, max_norm=1.0)


# Trainer-side plugins: `LightningModule.clip_gradients` and `Trainer(gradient_clip_val=...)` end in
# `precision_plugin.clip_gradients`. The check uses clipping by value because the Trainer's
# FSDPPrecision refuses clipping by norm whatever the optimizer (the FSDP root module must do it).
TRAINER_PLUGINS: dict[str, Callable[[], Any]] = {
    "mixed-16-scaler": lambda: TrainerMixedPrecision("16-mixed", "cpu", cpu_scaler()),
    "mixed-bf16": lambda: TrainerMixedPrecision("bf16-mixed", "cpu"),
    "precision-32-true": TrainerPrecision,
    "fsdp-16-mixed": lambda: TrainerFSDPPrecision("16-mixed"),
    "fsdp-bf16-mixed": lambda: TrainerFSDPPrecision("bf16-mixed"),
}
TRAINER_EXPECTED = {  # (plugin, fused) -> (can clip, Lightning's clip raises)
    ("mixed-16-scaler", True): (False, True),
    ("mixed-16-scaler", False): (True, False),
    # Lightning <= 2.6.6 refuses a fused optimizer under bf16-mixed although no scaler exists.
    ("mixed-bf16", True): (False, True),
    ("mixed-bf16", False): (True, False),
    ("precision-32-true", True): (True, False),
    ("precision-32-true", False): (True, False),
    # The Trainer's FSDPPrecision does not check fusion at all: its optimizer_step skips
    # `scaler.unscale_` for a fused optimizer, so a clip would act on still-scaled gradients.
    # Skipping (with the warning) is the honest answer even though Lightning does not raise.
    ("fsdp-16-mixed", True): (False, False),
    ("fsdp-16-mixed", False): (True, False),
    ("fsdp-bf16-mixed", True): (True, False),
    ("fsdp-bf16-mixed", False): (True, False),
}


@pytest.mark.parametrize(
    ("plugin", "fused"), list(TRAINER_EXPECTED), ids=[f"{p}-fused={f}" for p, f in TRAINER_EXPECTED]
)
def test_trainer_plugin(can_clip: CanClip, plugin: str, fused: bool) -> None:
    """The helper says False wherever the Trainer's clip raises (and True where it cannot)."""
    precision = TRAINER_PLUGINS[plugin]()
    model, optimizer = model_and_optimizer(fused)
    expected, raises = TRAINER_EXPECTED[plugin, fused]

    assert answer_and_warnings(can_clip, precision, optimizer) == (expected, int(not expected))

    loss_of(model).backward()
    if raises:
        with pytest.raises(RuntimeError, match=TRAINER_ERROR):
            precision.clip_gradients(optimizer, 1.0, GradClipAlgorithmType.VALUE)
    else:
        precision.clip_gradients(optimizer, 1.0, GradClipAlgorithmType.VALUE)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_every_fused_torch_optimizer_is_recognised(can_clip: CanClip, name: str) -> None:
    """Each torch optimizer with a fused CPU kernel in 2.13 hits the Trainer's refusal."""
    model, optimizer = model_and_optimizer(fused=True, name=name)
    precision = TrainerMixedPrecision("bf16-mixed", "cpu")

    assert answer_and_warnings(can_clip, precision, optimizer) == (False, 1)

    loss_of(model).backward()
    with pytest.raises(RuntimeError, match=TRAINER_ERROR):
        precision.clip_gradients(optimizer, 1.0, GradClipAlgorithmType.NORM)


# Real Fabric objects passed as the first argument, with the `_FabricOptimizer` that setup returns.
FABRIC_OBJECTS: dict[str, Callable[[], Fabric]] = {
    "plugin-16-mixed-scaler": lambda: Fabric(
        accelerator="cpu",
        devices=1,
        plugins=FabricMixedPrecision("16-mixed", "cpu", cpu_scaler()),
    ),
    "bf16-mixed": lambda: Fabric(accelerator="cpu", devices=1, precision="bf16-mixed"),
    # On a CPU, Fabric quietly turns "16-mixed" into bf16-mixed: no scaler, so clipping works.
    "16-mixed-on-cpu": lambda: Fabric(accelerator="cpu", devices=1, precision="16-mixed"),
    "32-true": lambda: Fabric(accelerator="cpu", devices=1),
}
FABRIC_OBJECT_EXPECTED = {
    ("plugin-16-mixed-scaler", True): False,
    ("plugin-16-mixed-scaler", False): True,
    ("bf16-mixed", True): True,
    ("16-mixed-on-cpu", True): True,
    ("32-true", True): True,
}


@pytest.mark.parametrize(
    ("setup", "fused"),
    list(FABRIC_OBJECT_EXPECTED),
    ids=[f"{s}-fused={f}" for s, f in FABRIC_OBJECT_EXPECTED],
)
def test_fabric_object_and_wrapped_optimizer(can_clip: CanClip, setup: str, fused: bool) -> None:
    """`can_clip_gradients(fabric, optimizer)` as the guard writes it, checked by fabric itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Fabric's "16-mixed is not supported on CPU" notice
        fabric = FABRIC_OBJECTS[setup]()
    model, optimizer = fabric.setup(*model_and_optimizer(fused))
    expected = FABRIC_OBJECT_EXPECTED[setup, fused]

    assert type(optimizer).__name__ == "FabricAdamW"  # the `_FabricOptimizer` wrapper
    assert answer_and_warnings(can_clip, fabric, optimizer) == (expected, int(not expected))
    unwrapped = optimizer.optimizer
    assert answer_and_warnings(can_clip, fabric.strategy.precision, unwrapped)[0] is expected

    fabric.backward(loss_of(model))
    if expected:
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
    else:
        with pytest.raises(NotImplementedError, match=FABRIC_ERROR):
            fabric.clip_gradients(model, optimizer, max_norm=1.0)


# Real Trainer objects as the first argument (the guard may pass `self.trainer`), with the
# `LightningOptimizer` wrapper that `self.optimizers()` returns in manual optimization.
TRAINER_OBJECTS: dict[str, Callable[[], Trainer]] = {
    "bf16-mixed": lambda: quiet_trainer(precision="bf16-mixed"),
    "plugin-16-mixed-scaler": lambda: quiet_trainer(
        plugins=[TrainerMixedPrecision("16-mixed", "cpu", cpu_scaler())]
    ),
    "32-true": lambda: quiet_trainer(),
}
TRAINER_OBJECT_EXPECTED = {
    ("bf16-mixed", True): False,
    ("bf16-mixed", False): True,
    ("plugin-16-mixed-scaler", True): False,
    ("plugin-16-mixed-scaler", False): True,
    ("32-true", True): True,
}


@pytest.mark.parametrize(
    ("setup", "fused"),
    list(TRAINER_OBJECT_EXPECTED),
    ids=[f"{s}-fused={f}" for s, f in TRAINER_OBJECT_EXPECTED],
)
def test_trainer_object_and_wrapped_optimizer(can_clip: CanClip, setup: str, fused: bool) -> None:
    """`can_clip_gradients(self.trainer, opt)` with a LightningOptimizer, checked by the Trainer."""
    trainer = TRAINER_OBJECTS[setup]()
    model, optimizer = model_and_optimizer(fused)
    wrapped = LightningOptimizer._to_lightning_optimizer(optimizer, trainer.strategy)
    expected = TRAINER_OBJECT_EXPECTED[setup, fused]

    assert type(wrapped).__name__ == "LightningAdamW"
    assert answer_and_warnings(can_clip, trainer, wrapped) == (expected, int(not expected))
    assert answer_and_warnings(can_clip, trainer.precision_plugin, optimizer)[0] is expected

    loss_of(model).backward()
    if expected:
        trainer.precision_plugin.clip_gradients(wrapped, 1.0, GradClipAlgorithmType.NORM)
    else:
        with pytest.raises(RuntimeError, match="LightningAdamW, " + TRAINER_ERROR):
            trainer.precision_plugin.clip_gradients(wrapped, 1.0, GradClipAlgorithmType.NORM)


def test_warns_once_over_many_calls(can_clip: CanClip) -> None:
    """A training loop calls the guard every step; the user should read the warning once."""
    _, optimizer = model_and_optimizer(fused=True)
    precision = FabricMixedPrecision("16-mixed", "cpu", cpu_scaler())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answers = [can_clip(precision, optimizer) for _ in range(5)]

    assert answers == [False] * 5
    assert len(caught) == 1
    assert caught[0].category is UserWarning
    assert str(caught[0].message).startswith(SKIP_WARNING)
    assert "AdamW" in str(caught[0].message)
    # stacklevel=2: the warning points at the user's clip call, not into the helper.
    assert caught[0].filename == __file__


def test_never_warns_when_clipping_is_possible(can_clip: CanClip) -> None:
    """True answers are silent, and they do not use up the single warning."""
    _, fused = model_and_optimizer(fused=True)
    _, plain = model_and_optimizer(fused=False)
    precision = FabricMixedPrecision("16-mixed", "cpu", cpu_scaler())

    assert answer_and_warnings(can_clip, precision, plain) == (True, 0)
    assert answer_and_warnings(can_clip, FabricPrecision(), fused) == (True, 0)
    assert answer_and_warnings(can_clip, precision, fused) == (False, 1)


def test_helper_imports_nothing_but_warnings() -> None:
    """The inserted code must run under every Lightning 2.x release: no Lightning imports."""
    tree = ast.parse(HELPER_SOURCE)
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imported == {"warnings"}
    assert [type(node) for node in tree.body] == [ast.FunctionDef]
    assert tree.body[0].name == HELPER_NAME


# The guard's else branch for an assigned Fabric clip: `unclipped_gradient_norm(fabric, ...)` must
# return what `fabric.clip_gradients` returns, so code that uses the result keeps working.
NormHelper = Callable[..., Any]


@pytest.fixture
def unclipped_norm() -> NormHelper:
    namespace: dict[str, Any] = {}
    exec(NORM_HELPER_SOURCE, namespace)
    return namespace[NORM_HELPER_NAME]


def scaled_fabric_step(fused: bool) -> tuple[Fabric, nn.Module, Any]:
    """A Fabric with a real GradScaler (16-mixed plugin) after one backward."""
    fabric = Fabric(
        accelerator="cpu",
        devices=1,
        plugins=FabricMixedPrecision("16-mixed", "cpu", cpu_scaler()),
    )
    model, optimizer = fabric.setup(*model_and_optimizer(fused))
    fabric.backward(loss_of(model))
    return fabric, model, optimizer


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), "inf"])
@pytest.mark.parametrize("torch_has_get_total_norm", [True, False])
def test_unclipped_norm_is_what_fabric_returns(
    unclipped_norm: NormHelper,
    monkeypatch: pytest.MonkeyPatch,
    norm_type: Any,
    torch_has_get_total_norm: bool,
) -> None:
    """Fused (skipped, gradients still scaled) == Lightning's own clip of the same unfused step."""
    if not torch_has_get_total_norm:  # torch < 2.6 has no get_total_norm: the fallback is used
        monkeypatch.delattr(torch.nn.utils, "get_total_norm")
    fabric, model, optimizer = scaled_fabric_step(fused=True)
    reference_fabric, reference_model, reference_optimizer = scaled_fabric_step(fused=False)

    norm = unclipped_norm(fabric, model, optimizer, max_norm=1.0, norm_type=norm_type)
    expected = reference_fabric.clip_gradients(
        reference_model, reference_optimizer, max_norm=1.0, norm_type=norm_type
    )

    assert isinstance(norm, torch.Tensor) and norm.ndim == 0
    assert norm.item() == pytest.approx(expected.item(), rel=1e-5)
    assert norm > 0 and float(norm) == norm.item()  # used as scripts use it
    # Nothing was unscaled: the gradients still carry the loss scale, which the norm does not.
    scale = fabric.strategy.precision.scaler.get_scale()
    assert scale > 1.0
    largest = max(p.grad.abs().max().item() for p in model.parameters())
    assert largest > 100 * norm.item()


def test_unclipped_norm_without_a_scaler_and_for_clip_val(unclipped_norm: NormHelper) -> None:
    """No scaler: the plain gradient norm. Clipping by value: None, as Fabric returns."""
    fabric = Fabric(accelerator="cpu", devices=1)
    model, optimizer = fabric.setup(*model_and_optimizer(fused=True))
    fabric.backward(loss_of(model))
    expected = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e9)

    assert unclipped_norm(fabric, model, optimizer, max_norm=1.0).item() == pytest.approx(
        expected.item()
    )
    assert unclipped_norm(fabric, model, optimizer, clip_val=0.5) is None
    assert unclipped_norm(fabric, model, optimizer, 0.5) is None  # clip_val is the 3rd argument
