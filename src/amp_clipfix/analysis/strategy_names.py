"""Lightning's strategies by the name it registers them under (`strategy="fsdp"`): a table of
names, kept apart from the qualified-name registry (analysis/names.py) it shares `Shards` with."""

from __future__ import annotations

from amp_clipfix.analysis.names import Shards

# Strategies by the name Lightning registers them under (`strategy="fsdp"`, lowered first; `None`
# is the default), from the registries of pytorch-lightning 1.9.5, lightning 2.0.9 and 2.6.6 (both
# APIs). A name not here is the project's own registration: what it does is decided at run time.
DDP_NAMES = tuple(
    f"ddp{launcher}{unused}"
    for launcher in ("", "_spawn", "_fork", "_notebook")
    for unused in ("", "_find_unused_parameters_false", "_find_unused_parameters_true")
)
REGISTERED_STRATEGIES = {
    name: shards
    for shards, registered in (
        (Shards.NONE, f"{' '.join(DDP_NAMES)} auto none dp single_device single_tpu single_xla"),
        (Shards.NONE, "xla xla_debug tpu_spawn tpu_spawn_debug horovod bagua"),
        (Shards.NONE, "hpu_parallel hpu_single ipu_strategy"),
        (Shards.FSDP, "fsdp fsdp_cpu_offload fsdp_native fsdp_native_full_shard_offload"),
        (Shards.FSDP, "fsdp_full_shard_offload ddp_fully_sharded"),
        (Shards.XLA_FSDP, "xla_fsdp"),
        (Shards.DEEPSPEED, "deepspeed deepspeed_stage_1 deepspeed_stage_1_offload"),
        (Shards.DEEPSPEED, "deepspeed_stage_2 deepspeed_stage_2_offload deepspeed_stage_3"),
        (Shards.DEEPSPEED, "deepspeed_stage_3_offload deepspeed_stage_3_offload_nvme"),
        (Shards.FAIRSCALE, "ddp_sharded ddp_sharded_find_unused_parameters_false"),
        (Shards.FAIRSCALE, "ddp_sharded_spawn ddp_sharded_spawn_find_unused_parameters_false"),
        (Shards.COLOSSALAI, "colossalai"),
    )
    for name in registered.split()
}


def strategy_names(shards: Shards) -> frozenset[str]:
    """The registered strategy names that shard one way."""
    return frozenset(name for name, kind in REGISTERED_STRATEGIES.items() if kind is shards)


FSDP_STRATEGY_NAMES = strategy_names(Shards.FSDP)
# Strategies that clip through the wrapped module's own clip (FSDP, XLA FSDP), which has no
# `error_if_nonfinite`, or refuse to clip (DeepSpeed): Lightning 2.0.9 - 2.6.6 sources.
OWN_CLIP_SHARDS = frozenset({Shards.FSDP, Shards.XLA_FSDP, Shards.DEEPSPEED})


def registered_strategy(value: str) -> Shards | None:
    """How the strategy Lightning registers under a name shards; None for a name it does not
    register (one the project registers itself: never guessed from its spelling)."""
    return REGISTERED_STRATEGIES.get(value.lower())


def strategy_name_shards(value: str) -> bool | None:
    """Whether a registered strategy name (`strategy="fsdp"`) shards the model; None for a
    name this table does not know (a strategy the project registers itself)."""
    shards = registered_strategy(value)
    return None if shards is None else shards.sharded
