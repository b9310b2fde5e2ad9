"""The Lightning and torch names the detector recognises, by qualified name.

Qualified names come from the collector's scope analysis (analysis/scopes.py, libcst's rules),
so `import lightning as L; L.Fabric`, `from lightning.fabric import Fabric as F` and the legacy
packages all resolve to one of these.
"""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.models import EntryId

FABRIC_CLASSES = frozenset(
    {
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning.fabric.fabric.Fabric",
        "lightning_fabric.Fabric",
        "lightning_fabric.fabric.Fabric",
    }
)

TRAINER_CLASSES = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)

LIGHTNING_MODULE_CLASSES = frozenset(
    {
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule",
        "pytorch_lightning.core.lightning.LightningModule",
    }
)

# LightningCLI builds one Trainer from its YAML trainer sections and `trainer_defaults`.
CLI_CLASSES = frozenset(
    {
        "lightning.pytorch.cli.LightningCLI",
        "pytorch_lightning.cli.LightningCLI",
        "pytorch_lightning.utilities.cli.LightningCLI",
    }
)
# The entry of that Trainer: every trainer section configures it (a config's `model` section
# names the class it fits: `models.ConfigModel`).
CLI_TRAINER = EntryId(Path(), 0, 0, cli=True)

FABRIC_PACKAGES = ("lightning.fabric.", "lightning_fabric.")
TRAINER_PACKAGES = ("lightning.pytorch.", "pytorch_lightning.")

# Precision plugins whose clip path raises with a fused optimizer, and the index of their
# positional `scaler` argument (FSDPPrecision takes no device).
FABRIC_PLUGINS = {"MixedPrecision": 2, "FSDPPrecision": 1}
TRAINER_PLUGINS = {
    "MixedPrecision": 2,
    "MixedPrecisionPlugin": 2,
    "NativeMixedPrecisionPlugin": 2,
}

# Strategies, by class (in the strategies packages) and by registry name: a sharded one (FSDP,
# DeepSpeed) clips differently, and the unscale fix does not apply there.
STRATEGY_PACKAGES = (
    "lightning.pytorch.strategies.",
    "lightning.fabric.strategies.",
    "pytorch_lightning.strategies.",
    "lightning_fabric.strategies.",
)
SHARDED_STRATEGY_CLASSES = frozenset(
    {
        "FSDPStrategy",
        "DeepSpeedStrategy",
        "ModelParallelStrategy",
        "XLAFSDPStrategy",
        "DDPFullyShardedStrategy",
        "DDPFullyShardedNativeStrategy",
        "DDPShardedStrategy",
        "DDPSpawnShardedStrategy",
        "ColossalAIStrategy",
    }
)
PLAIN_STRATEGY_CLASSES = frozenset(
    {
        "DDPStrategy",
        "DDPSpawnStrategy",
        "DataParallelStrategy",
        "SingleDeviceStrategy",
        "SingleDeviceXLAStrategy",
        "XLAStrategy",
        "HorovodStrategy",
    }
)
SHARDED_STRATEGY_WORDS = ("fsdp", "deepspeed", "sharded", "colossalai", "model_parallel")
PLAIN_STRATEGY_NAMES = frozenset(
    {"auto", "dp", "single_device", "single_xla", "xla", "xla_debug", "horovod", "None"}
)
# Precision plugins that belong to a sharded strategy.
SHARDED_PLUGINS = frozenset({"FSDPPrecision", "FSDPMixedPrecisionPlugin"})


def strategy_name_shards(value: str) -> bool | None:
    """Whether a registered strategy name (`strategy="fsdp"`) shards the model; None for a
    name this table does not know (a strategy the project registers itself)."""
    lowered = value.lower()
    if any(word in lowered for word in SHARDED_STRATEGY_WORDS):
        return True
    if value in PLAIN_STRATEGY_NAMES or lowered.startswith("ddp"):
        return False
    return None


def strategy_class_shards(qualified_names: set[str]) -> bool | None:
    """Whether a strategy class of Lightning's shards the model; None for any other class."""
    for qualified_name in qualified_names:
        if not qualified_name.startswith(STRATEGY_PACKAGES):
            continue
        short = qualified_name.rsplit(".", 1)[-1]
        if short in SHARDED_STRATEGY_CLASSES:
            return True
        if short in PLAIN_STRATEGY_CLASSES:
            return False
    return None


OPTIMIZER_MODULES = {"Adam": "adam", "AdamW": "adamw", "SGD": "sgd", "Adagrad": "adagrad"}
FUSABLE_OPTIMIZERS = frozenset(
    name
    for cls, module in OPTIMIZER_MODULES.items()
    for name in (f"torch.optim.{cls}", f"torch.optim.{module}.{cls}")
)

# The function the guard fix inserts: a clip call inside `if can_clip_gradients(...)` is fixed.
GUARD_HELPER = "can_clip_gradients"
# The functions the unscale fix inserts: a Fabric clip made through the first is no clip site, and
# a LightningModule whose configure_gradient_clipping calls the second clips fused optimizers.
FABRIC_UNSCALE_HELPER = "clip_gradients_unscaled"
MODULE_UNSCALE_HELPER = "clip_module_gradients_unscaled"

# `fabric.launch(fn, *args)` calls `fn(fabric, *args)`.
FABRIC_LAUNCH = "launch"
# `Thread(target=fn, args=(...), kwargs={...})` and `Process(...)` call `fn(*args, **kwargs)`.
CALLABLE_STARTERS = frozenset(
    {
        "threading.Thread",
        "multiprocessing.Process",
        "multiprocessing.context.Process",
        "torch.multiprocessing.Process",
    }
)

PARTIAL_FUNCTIONS = frozenset({"functools.partial"})
DICT_CONSTRUCTORS = frozenset({"builtins.dict", "dict"})

# Precision values as Lightning normalises them (ints are compared as their str()).
SCALER_PRECISIONS = frozenset({"16", "16-mixed"})
MIXED_PRECISIONS = SCALER_PRECISIONS | {"bf16", "bf16-mixed"}


def is_mixed_precision(value: str) -> bool:
    """Only mixed precision takes part; `"32-true"` and `"16-true"` never hit the error."""
    return value in MIXED_PRECISIONS


def plugin_scaler_index(qualified_name: str) -> tuple[str, int] | None:
    """Return ("fabric" | "trainer", scaler position) for a known precision plugin class."""
    short = qualified_name.rsplit(".", 1)[-1]
    if qualified_name.startswith(FABRIC_PACKAGES) and short in FABRIC_PLUGINS:
        return "fabric", FABRIC_PLUGINS[short]
    if qualified_name.startswith(TRAINER_PACKAGES) and short in TRAINER_PLUGINS:
        return "trainer", TRAINER_PLUGINS[short]
    return None


# torch's loss scalers: `scale(loss)` multiplies, `unscale_(opt)` divides the optimizer's grads.
GRAD_SCALERS = frozenset(
    {
        "torch.GradScaler",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.cpu.amp.GradScaler",
        "torch.cpu.amp.grad_scaler.GradScaler",
        "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    }
)

# torch's clipping functions, by the argument that bounds the gradients.
TORCH_CLIPS = {
    "torch.nn.utils.clip_grad_norm_": "max_norm",
    "torch.nn.utils.clip_grad.clip_grad_norm_": "max_norm",
    "torch.nn.utils.clip_grad_value_": "clip_value",
    "torch.nn.utils.clip_grad.clip_grad_value_": "clip_value",
}
