"""The library model's registry: every library object the analysis knows, by qualified name.

One table (`LIBRARY`) maps each qualified name to an `Entry` saying what the object is (its
`Kind`) and the facts a rule or the evaluator asks about it (which argument carries the
precision, the scaler or the strategy, how a strategy shards, which device an old AMP class is
bound to). Nothing else in the analysis or the rules writes a library's qualified name: the
evaluator dispatches on `kind_of(qname)` (library.py), and the sets other modules compare
against (`FABRIC_CLASSES`, `FUSABLE_OPTIMIZERS`, ...) are views of the table. A new library fact
is a new entry or field here (CONTRIBUTING.md, "Adding a rule that needs a new library fact");
`tests/test_library_names.py` fails on a library qualified name written anywhere else.

Qualified names come from the collector's scope analysis (analysis/scopes.py, libcst's rules)
and the evaluator's imports, so `import lightning as L; L.Fabric`, `from lightning.fabric import
Fabric as F` and the legacy packages all resolve to one of these. The module stays cheap to
import: enums and records, no parsing.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from amp_clipfix.analysis.lightning_api import PRECISION_ARGUMENT, STRATEGY_ARGUMENT
from amp_clipfix.models import EntryId
from amp_clipfix.paths import LIBRARY_PACKAGES
from amp_clipfix.records import record, replace


class Kind(Enum):
    """What a library object is, as far as the analysis cares."""

    FABRIC = "Fabric"
    TRAINER = "Trainer"
    LIGHTNING_MODULE = "LightningModule"
    LIGHTNING_CLI = "LightningCLI"  # builds one Trainer from YAML and `trainer_defaults`
    CALLBACK = "Callback"  # its hooks clip whatever module its Trainer fits
    PRECISION_PLUGIN = "precision plugin"  # one whose clip path refuses a fused optimizer
    STRATEGY = "strategy"
    OPTIMIZER = "fusable optimizer"  # a torch optimizer that takes `fused`
    ANY_OPTIMIZER = "torch.optim class"  # `getattr(torch.optim, name)`: a name not in the code
    OPTIMIZER_MODULE = "torch.optim"  # the module a `getattr` picks an optimizer from
    LR_SCHEDULER = "torch LR scheduler"  # its `step()` moves the learning rate, not weights
    GRAD_SCALER = "GradScaler"
    AUTOCAST = "autocast"
    CLIP_FUNCTION = "clip function"  # torch's clip_grad_norm_ / clip_grad_value_
    CLIP_ALGORITHM = "GradClipAlgorithmType"  # a member: `gradient_clip_algorithm=` spelled
    PARTIAL = "partial"  # `functools.partial(func, **keywords)`
    CALLABLE_STARTER = "Thread / Process"  # `Thread(target=fn, args=, kwargs=)` calls `fn`
    DICT = "dict"  # `dict(...)`: a dict constructor
    GETATTR = "getattr"
    SUPER = "super"
    # Known, but not modelled yet: their values are decided at run time (library.py).
    INSTANTIATE = "hydra.utils.instantiate"  # builds `_target_` with the config's arguments
    ARGUMENT_PARSER = "argparse.ArgumentParser"  # `add_argument(..., default=...)`
    DATACLASS_FIELD = "dataclasses.field"  # `field(default=...)` in a dataclass body
    DATACLASS = "dataclasses.dataclass"  # its fields are `__init__`'s (analysis/fields.py)
    ENVIRON_GET = "os.environ.get"  # `os.environ.get(name, default)`
    # issue 37, containers (analysis/sequences.py, dataclass_calls.py, namespaces.py)
    SEQUENCE = "list / tuple"  # `list(x)`, `tuple(x)`: the elements of `x`
    DATACLASS_ASDICT = "dataclasses.asdict"  # a dict of the instance's fields
    DATACLASS_REPLACE = "dataclasses.replace"  # the instance with some fields changed
    DATACLASS_FIELDS = "dataclasses.fields"  # the instance's (or class's) fields
    NAMESPACE = "types.SimpleNamespace"  # an object whose attributes are its keywords
    VARS = "vars"  # `vars(namespace)`: its attributes as a dict
    NAMED_TUPLE = "typing.NamedTuple"  # a base: the class body's annotations are fields
    CONFIG_DOCUMENT = "OmegaConf.create"  # a config written in Python (python_configs.py)


class Side(Enum):
    """Which of Lightning's two APIs a plugin or strategy class belongs to."""

    FABRIC = "fabric"
    TRAINER = "trainer"


class Shards(Enum):
    """How a strategy (or the precision plugin of one) holds the model: a sharded one (FSDP,
    DeepSpeed, ...) clips differently, and the unscale fix does not apply there."""

    NONE = "none"  # DDP, data parallel, a single device, XLA, Horovod
    FSDP = "fsdp"  # torch's FSDP (1.x: also fairscale's fully sharded)
    DEEPSPEED = "deepspeed"
    XLA_FSDP = "xla_fsdp"
    MODEL_PARALLEL = "model_parallel"
    FAIRSCALE = "fairscale"  # fairscale's sharded DDP (1.x)
    COLOSSALAI = "colossalai"

    @property
    def sharded(self) -> bool:
        return self is not Shards.NONE


@record(frozen=True)
class Parameter:
    """An argument of a library callable: its keyword, and its position when it may be passed
    positionally."""

    name: str
    position: int | None = None


@record(frozen=True)
class Entry:
    """What the analysis knows of one library object (the fields that do not apply are None)."""

    kind: Kind
    side: Side | None = None  # plugins and strategies: Fabric's or the Trainer's
    precision: Parameter | None = None  # Trainer, Fabric, precision plugins
    scaler: Parameter | None = None  # precision plugins: where the GradScaler is passed
    plugins: Parameter | None = None  # Trainer, Fabric
    strategy: Parameter | None = None  # Trainer, Fabric
    launch: str | None = None  # Fabric: `fabric.launch(fn, *args)` calls `fn(fabric, *args)`
    shards: Shards | None = None  # strategies and plugins
    device: str | None = None  # a `torch.cuda.amp` / `torch.cpu.amp` class: its device
    torch_amp: bool = False  # the `torch.amp` spelling that takes the device as an argument
    bound: str | None = None  # clip functions: the argument that bounds the gradients
    enabled: Parameter | None = None  # GradScalers: where `enabled` is passed
    algorithm: str | None = None  # a GradClipAlgorithmType member: the string it stands for
    # Thread / Process: the parameters holding the callable it calls, its `*args`, its `**kwargs`
    starts: tuple[Parameter, Parameter, Parameter] | None = None
    namespace: int | None = None  # `from_argparse_args(args)`: where the Namespace of kwargs is


TRAINER_PACKAGES = ("lightning.pytorch", "pytorch_lightning")
FABRIC_PACKAGES = ("lightning.fabric", "lightning_fabric")
PACKAGES = {Side.FABRIC: FABRIC_PACKAGES, Side.TRAINER: TRAINER_PACKAGES}
# Packages whose objects are never the project's (LIBRARY_PACKAGES, paths.py's): a name imported
# from one is not looked for among the project's modules; their own modules are never read.
EXTERNAL_ROOTS = LIBRARY_PACKAGES | {"builtins"}  # and the names a module uses unimported

FABRIC_LAUNCH = "launch"
FABRIC_SETUPS = ("setup", "setup_optimizers")  # return the optimizers given them, wrapped
MODULE_OPTIMIZERS = "optimizers"  # `LightningModule.optimizers()`: its LightningOptimizer(s)
FABRIC = Entry(
    Kind.FABRIC,
    precision=Parameter(PRECISION_ARGUMENT),
    plugins=Parameter("plugins"),
    strategy=Parameter(STRATEGY_ARGUMENT),
    launch=FABRIC_LAUNCH,
)
TRAINER = Entry(
    Kind.TRAINER,
    precision=Parameter(PRECISION_ARGUMENT),
    plugins=Parameter("plugins"),
    strategy=Parameter(STRATEGY_ARGUMENT),
)

LIBRARY: dict[str, Entry] = {}


def register(entry: Entry, *qualified_names: str) -> None:
    for qualified_name in qualified_names:
        LIBRARY[qualified_name] = entry


def under(packages: tuple[str, ...], *paths: str) -> list[str]:
    """`package.path` for every package and path: where a class is importable from."""
    return [f"{package}.{path}" if package else path for package in packages for path in paths]


register(
    FABRIC,
    *under(("lightning", *FABRIC_PACKAGES), "Fabric"),
    *under(FABRIC_PACKAGES, "fabric.Fabric"),
)
TRAINER_PATHS = ("Trainer", "trainer.Trainer", "trainer.trainer.Trainer")
register(TRAINER, "lightning.Trainer", *under(TRAINER_PACKAGES, *TRAINER_PATHS))
FROM_ARGPARSE_ARGS = "from_argparse_args"  # removed in 2.0: a Namespace's attributes as kwargs
register(
    replace(TRAINER, namespace=0),
    *(f"{path}.{FROM_ARGPARSE_ARGS}" for path in under(TRAINER_PACKAGES, *TRAINER_PATHS)),
)
register(
    Entry(Kind.LIGHTNING_MODULE),
    *under(("lightning", *TRAINER_PACKAGES), "LightningModule"),
    *under(TRAINER_PACKAGES, "core.LightningModule", "core.module.LightningModule"),
    "pytorch_lightning.core.lightning.LightningModule",
)
register(
    Entry(Kind.LIGHTNING_CLI),
    *under(TRAINER_PACKAGES, "cli.LightningCLI"),
    "pytorch_lightning.utilities.cli.LightningCLI",
)
register(
    Entry(Kind.CALLBACK),
    *under(
        ("lightning", *TRAINER_PACKAGES),
        "Callback",
        "callbacks.Callback",
        "callbacks.callback.Callback",
    ),
)

# Precision plugins whose clip path raises with a fused optimizer: side, class, its modules
# in `plugins.precision`, the position of its `scaler` argument (FSDPPrecision takes no
# device), and the strategy it belongs to.
PRECISION_PLUGINS = (
    (Side.FABRIC, "MixedPrecision", ("amp", "native_amp"), 2, Shards.NONE),
    (Side.FABRIC, "FSDPPrecision", ("fsdp",), 1, Shards.FSDP),
    (Side.TRAINER, "MixedPrecision", ("amp",), 2, Shards.NONE),
    (Side.TRAINER, "MixedPrecisionPlugin", ("amp", "native_amp"), 2, Shards.NONE),
    (Side.TRAINER, "NativeMixedPrecisionPlugin", ("native_amp",), 2, Shards.NONE),
)


def register_plugins() -> None:
    for side, cls, modules, scaler, shards in PRECISION_PLUGINS:
        register(
            Entry(
                Kind.PRECISION_PLUGIN,
                side=side,
                precision=Parameter("precision", 0),
                scaler=Parameter("scaler", scaler),
                shards=shards,
            ),
            *under(
                PACKAGES[side],
                f"plugins.{cls}",
                f"plugins.precision.{cls}",
                *(f"plugins.precision.{module}.{cls}" for module in modules),
            ),
        )


register_plugins()

# Lightning's strategy classes (both APIs, every line): class, its module in `strategies`, and
# how it shards.
STRATEGIES = (
    ("FSDPStrategy", "fsdp", Shards.FSDP),
    ("DDPFullyShardedNativeStrategy", "fully_sharded_native", Shards.FSDP),
    ("DDPFullyShardedStrategy", "fully_sharded", Shards.FSDP),
    ("DeepSpeedStrategy", "deepspeed", Shards.DEEPSPEED),
    ("XLAFSDPStrategy", "xla_fsdp", Shards.XLA_FSDP),
    ("ModelParallelStrategy", "model_parallel", Shards.MODEL_PARALLEL),
    ("DDPShardedStrategy", "sharded", Shards.FAIRSCALE),
    ("DDPSpawnShardedStrategy", "sharded_spawn", Shards.FAIRSCALE),
    ("ColossalAIStrategy", "colossalai", Shards.COLOSSALAI),
    ("DDPStrategy", "ddp", Shards.NONE),
    ("DDPSpawnStrategy", "ddp_spawn", Shards.NONE),
    ("DataParallelStrategy", "dp", Shards.NONE),
    ("SingleDeviceStrategy", "single_device", Shards.NONE),
    ("SingleDeviceXLAStrategy", "single_xla", Shards.NONE),
    ("XLAStrategy", "xla", Shards.NONE),
    ("HorovodStrategy", "horovod", Shards.NONE),
)


def register_strategies() -> None:
    for side in Side:
        for cls, module, shards in STRATEGIES:
            register(
                Entry(Kind.STRATEGY, side=side, shards=shards),
                *under(PACKAGES[side], f"strategies.{cls}", f"strategies.{module}.{cls}"),
            )


register_strategies()

# torch's optimizers that take `fused`, by their module in torch.optim.
OPTIMIZER_MODULES = {"Adam": "adam", "AdamW": "adamw", "SGD": "sgd", "Adagrad": "adagrad"}


def register_optimizers() -> None:
    for cls, module in OPTIMIZER_MODULES.items():
        register(Entry(Kind.OPTIMIZER), f"torch.optim.{cls}", f"torch.optim.{module}.{cls}")


register_optimizers()
OPTIMIZER_MODULE = "torch.optim"
UNKNOWN_OPTIMIZER = "torch.optim.*"  # getattr(torch.optim, name) with a name not in the code
register(Entry(Kind.OPTIMIZER_MODULE), OPTIMIZER_MODULE)
register(Entry(Kind.ANY_OPTIMIZER), UNKNOWN_OPTIMIZER)

# torch's loss scalers (`scale(loss)` multiplies, `unscale_(opt)` divides the optimizer's
# grads) and autocast: the `torch.amp` spellings, and the device-bound ones torch 2.4 deprecates.
# `enabled` as torch 2.13 takes it: after the device where the class takes one, else fifth.
AMP_ENABLED = Parameter("enabled", 5)  # (device, init_scale, growth_factor, ..., enabled)
DEVICE_ENABLED = Parameter("enabled", 4)  # (init_scale, growth_factor, ..., enabled)
register(
    Entry(Kind.GRAD_SCALER, torch_amp=True, enabled=AMP_ENABLED),
    "torch.GradScaler",
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
)
register(
    Entry(Kind.AUTOCAST, torch_amp=True),
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
)


def register_device_amp() -> None:
    for device in ("cuda", "cpu"):
        register(
            Entry(Kind.GRAD_SCALER, device=device, enabled=DEVICE_ENABLED),
            *under(("torch",), f"{device}.amp.GradScaler", f"{device}.amp.grad_scaler.GradScaler"),
        )
        register(
            Entry(Kind.AUTOCAST, device=device),
            *under(("torch",), f"{device}.amp.autocast", f"{device}.amp.autocast_mode.autocast"),
        )


register_device_amp()

register(
    Entry(Kind.GRAD_SCALER, shards=Shards.FSDP, enabled=AMP_ENABLED),
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
)
# The methods torch's GradScaler runs to scale a loss, unscale an optimizer's gradients once and
# step it (torch/amp/grad_scaler.py: `unscale_` runs `_unscale_grads_`; `step` unscales only an
# optimizer not unscaled yet, then `_maybe_opt_step` skips a step whose gradients overflowed), and
# the hook that would intercept every one of them. A project subclass that defines none of them
# scales, unscales and steps as the library class does (scaler_calls.scaler_base).
GRAD_SCALER_METHODS = frozenset(
    {"scale", "unscale_", "_unscale_grads_", "step", "_maybe_opt_step", "__getattribute__"}
)


def register_clips() -> None:
    """torch's clipping functions, by the argument that bounds the gradients."""
    for function, bound in (("clip_grad_norm_", "max_norm"), ("clip_grad_value_", "clip_value")):
        register(
            Entry(Kind.CLIP_FUNCTION, bound=bound),
            *under(("torch.nn.utils",), function, f"clip_grad.{function}"),
        )


register_clips()


def register_clip_algorithms() -> None:
    """The Trainer's `GradClipAlgorithmType.NORM` / `.VALUE`: the strings `"norm"`, `"value"`."""
    for member in ("NORM", "VALUE"):
        register(
            Entry(Kind.CLIP_ALGORITHM, algorithm=member.lower()),
            *under(
                TRAINER_PACKAGES,
                f"utilities.GradClipAlgorithmType.{member}",
                f"utilities.enums.GradClipAlgorithmType.{member}",
            ),
        )


register_clip_algorithms()
register(Entry(Kind.PARTIAL), "functools.partial")
# `Thread(group, target, name, args, kwargs)` and `Process(...)` (same order) call
# `target(*args, **kwargs)`.
STARTS = (Parameter("target", 1), Parameter("args", 3), Parameter("kwargs", 4))
register(
    Entry(Kind.CALLABLE_STARTER, starts=STARTS),
    "threading.Thread",
    "multiprocessing.Process",
    "multiprocessing.context.Process",
    "torch.multiprocessing.Process",
)
register(Entry(Kind.DICT), "builtins.dict", "dict")
# torch's learning-rate schedulers (every release the tool knows, 1.x's `_LRScheduler` too).
LR_SCHEDULERS = (  # noqa: SIM905 - one name per line would take 20 lines
    "LRScheduler _LRScheduler LambdaLR MultiplicativeLR StepLR MultiStepLR ConstantLR LinearLR "
    "ExponentialLR SequentialLR PolynomialLR CosineAnnealingLR ChainedScheduler "
    "ReduceLROnPlateau CyclicLR CosineAnnealingWarmRestarts OneCycleLR"
).split()
register(Entry(Kind.LR_SCHEDULER), *under(("torch.optim.lr_scheduler",), *LR_SCHEDULERS))
register(Entry(Kind.GETATTR), "builtins.getattr")
register(Entry(Kind.SUPER), "builtins.super")
register(Entry(Kind.INSTANTIATE), "hydra.utils.instantiate", "hydra.utils.call")
register(Entry(Kind.ARGUMENT_PARSER), "argparse.ArgumentParser")
register(Entry(Kind.DATACLASS_FIELD), "dataclasses.field")
register(Entry(Kind.DATACLASS), "dataclasses.dataclass")
register(Entry(Kind.ENVIRON_GET), "os.environ.get", "os.getenv")
register(Entry(Kind.SEQUENCE), "builtins.list", "builtins.tuple")
register(Entry(Kind.DATACLASS_ASDICT), "dataclasses.asdict")
register(Entry(Kind.DATACLASS_REPLACE), "dataclasses.replace", "copy.replace")
register(Entry(Kind.DATACLASS_FIELDS), "dataclasses.fields")
register(Entry(Kind.NAMESPACE), "types.SimpleNamespace")
register(Entry(Kind.VARS), "builtins.vars")
register(Entry(Kind.NAMED_TUPLE), "typing.NamedTuple", "typing_extensions.NamedTuple")
register(Entry(Kind.CONFIG_DOCUMENT), "omegaconf.OmegaConf.create", "omegaconf.DictConfig")


def entry_of(qualified_name: str) -> Entry | None:
    return LIBRARY.get(qualified_name)


def kind_of(qualified_name: str) -> Kind | None:
    entry = LIBRARY.get(qualified_name)
    return None if entry is None else entry.kind


def of_kind(*kinds: Kind) -> frozenset[str]:
    """The qualified names of every object of these kinds."""
    return frozenset(name for name, entry in LIBRARY.items() if entry.kind in kinds)


# -- views of the table (what other modules compare against) --------------------------------------

FABRIC_CLASSES = of_kind(Kind.FABRIC)
# The packages a Fabric class is imported from: a project that imports none of them makes none.
FABRIC_ROOTS = tuple(sorted({qname.split(".", 1)[0] for qname in FABRIC_CLASSES}))
TRAINER_CLASSES = of_kind(Kind.TRAINER)
LIGHTNING_MODULE_CLASSES = of_kind(Kind.LIGHTNING_MODULE)
CLI_CLASSES = of_kind(Kind.LIGHTNING_CLI)
CALLBACK_CLASSES = of_kind(Kind.CALLBACK)
FUSABLE_OPTIMIZERS = of_kind(Kind.OPTIMIZER)
PARTIAL_FUNCTIONS = of_kind(Kind.PARTIAL)
DICT_CONSTRUCTORS = of_kind(Kind.DICT)
GRAD_SCALERS = of_kind(Kind.GRAD_SCALER)
# A read of the attribute runs the method (analysis/descriptors.py); no collector needs them.
DESCRIPTORS = frozenset({"builtins.property", "functools.cached_property"})
TORCH_CLIPS = {
    name: entry.bound
    for name, entry in LIBRARY.items()
    if entry.kind is Kind.CLIP_FUNCTION and entry.bound
}
TORCH_CLIP_BOUNDS = frozenset(TORCH_CLIPS.values())  # `max_norm`, `clip_value`
# Their names as attributes of their modules (`clip_grad_norm_`, `clip_grad_value_`).
TORCH_CLIP_NAMES = frozenset(name.rsplit(".", 1)[1] for name in TORCH_CLIPS)
# Names a module uses without importing them: `dict`, `getattr`, `super`.
BUILTINS = {name.split(".", 1)[1]: name for name in LIBRARY if name.startswith("builtins.")}
SHARDED_PLUGINS = frozenset(
    name
    for name, entry in LIBRARY.items()
    if entry.kind is Kind.PRECISION_PLUGIN and entry.shards and entry.shards.sharded
)

# The entry of the LightningCLI's one Trainer: every trainer section configures it (a config's
# `model` section names the class it fits: `models.ConfigModel`).
CLI_TRAINER = EntryId(Path(), 0, 0, cli=True)


def plugin_scaler_index(qualified_name: str) -> tuple[str, int] | None:
    """Return ("fabric" | "trainer", scaler position) for a known precision plugin class."""
    entry = LIBRARY.get(qualified_name)
    if entry is None or entry.side is None or entry.scaler is None:
        return None
    return entry.side.value, entry.scaler.position or 0


def strategy_class_shards(qualified_names: set[str]) -> bool | None:
    """Whether a strategy class of Lightning's shards the model; None for any other class."""
    for qualified_name in qualified_names:
        entry = LIBRARY.get(qualified_name)
        if entry is not None and entry.kind is Kind.STRATEGY and entry.shards is not None:
            return entry.shards.sharded
    return None


def strategy_classes(side: Side, shards: Shards) -> frozenset[str]:
    """Lightning's strategy classes of one API that shard one way."""
    return frozenset(
        name
        for name, entry in LIBRARY.items()
        if entry.kind is Kind.STRATEGY and entry.side is side and entry.shards is shards
    )


def strategy_shards(qualified_name: str) -> Shards | None:
    """How a strategy class of Lightning's shards; None for any other class."""
    entry = LIBRARY.get(qualified_name)
    return entry.shards if entry is not None and entry.kind is Kind.STRATEGY else None


# Precision values as Lightning normalises them (ints are compared as their str()).
SCALER_PRECISIONS = frozenset({"16", "16-mixed"})
MIXED_PRECISIONS = SCALER_PRECISIONS | {"bf16", "bf16-mixed"}


def is_mixed_precision(value: str) -> bool:
    """Only mixed precision takes part; `"32-true"` and `"16-true"` never hit the error."""
    return value in MIXED_PRECISIONS


# -- amp-clipfix's own helpers (not a library's, kept with the names they are matched with) -------

# The function the guard fix inserts: a clip call inside `if can_clip_gradients(...)` is fixed.
GUARD_HELPER = "can_clip_gradients"
# The functions the unscale fix inserts: a Fabric clip made through the first is no clip site, and
# a LightningModule whose configure_gradient_clipping calls the second clips fused optimizers.
FABRIC_UNSCALE_HELPER = "clip_gradients_unscaled"
MODULE_UNSCALE_HELPER = "clip_module_gradients_unscaled"
