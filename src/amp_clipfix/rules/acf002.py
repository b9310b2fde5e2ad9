"""ACF002: the Trainer clips the gradients of a fused optimizer under mixed precision."""

from __future__ import annotations

from amp_clipfix.analysis.link import trainer_groups
from amp_clipfix.helper_sources import MODULE_HELPER_SOURCE
from amp_clipfix.models import LightningPath, Strategy
from amp_clipfix.rules.base import TRAINER_ERROR, Rule, safety
from amp_clipfix.strategies import SAFETY

MESSAGE = (
    "Trainer clips gradients of a fused optimizer under mixed precision: Lightning raises "
    "RuntimeError (the current optimizer does not allow for gradient clipping)"
)

WHY = (
    "Torch's fused optimizers (`fused=True`) unscale their own gradients inside `step()`. When "
    "the Trainer clips (`gradient_clip_val` > 0, `self.clip_gradients(...)` or a "
    "`configure_gradient_clipping` override), Lightning's `MixedPrecision.clip_gradients` "
    "refuses and raises (with the optimizer's class name):\n\n"
    f"    {TRAINER_ERROR}\n\n"
    "In every release up to 2.6.6 this happens under any `MixedPrecision`: `16-mixed` and "
    "`bf16-mixed` alike. Lightning master (PR #21436, unreleased) raises only when a GradScaler "
    "is present, i.e. under `16-mixed`."
)

BEFORE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model(), train_dataloaders=loader)
"""

# What `amp-clipfix apply` (strategy auto: unscale) makes of BEFORE; a test keeps it true.
EXAMPLE_AFTER = (
    """\
import lightning as L
import torch


"""
    + MODULE_HELPER_SOURCE
    + """

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ):
        # amp-clipfix: Lightning refuses to clip a fused optimizer under mixed precision, so clip
        # it through the run's GradScaler; every other optimizer goes to Lightning as before.
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            clip_module_gradients_unscaled(
                self, optimizer, gradient_clip_val, gradient_clip_algorithm
            )
        else:
            super().configure_gradient_clipping(
                optimizer, gradient_clip_val, gradient_clip_algorithm
            )


trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model(), train_dataloaders=loader)
"""
)

RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code="ACF002",
    message=MESSAGE,
    why=WHY,
    lightning_path=LightningPath.TRAINER,
    find=trainer_groups,
    name="trainer-clip-fused-mixed-precision",
    short=(
        "The Trainer clips gradients of a fused optimizer under mixed precision "
        "(bf16-mixed too on Lightning <= 2.6.6)."
    ),
    full=(
        "A Trainer with mixed precision (`16-mixed`, `16`; on Lightning <= 2.6.6 "
        "`bf16-mixed` too) that clips gradients (`gradient_clip_val` > 0, a Callback or hook "
        "calling `clip_gradients(...)`, or a `configure_gradient_clipping` override), and the "
        "LightningModule class it trains (followed from `trainer.fit(...)`), whose optimizer "
        "is fused (`fused=True` however it gets there: a factory, a mixin, a partial, a dict "
        "spread, a default, a constant). Where the trained class cannot be followed, the "
        "Trainer is linked to every class no followed fit accounts for, as a review finding "
        "(ACF003). Lightning raises RuntimeError when it clips."
    ),
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`). The LightningModule class that builds the fused optimizer "
            "gets a `configure_gradient_clipping` override (in the class's own file, in the "
            "hook signature of the target release: 1.x passes `optimizer_idx`): a fused "
            "optimizer is unscaled with `self.trainer.precision_plugin`'s scaler when there is "
            "one and clipped with torch by `gradient_clip_algorithm`; every other optimizer "
            "goes to `super().configure_gradient_clipping(...)`. An existing override is "
            "edited instead: its `self.clip_gradients(...)` and "
            "`super().configure_gradient_clipping(...)` calls, like those of manual "
            "optimization, go through the inserted `clip_module_gradients_unscaled` helper. "
            "Refused where the optimizer is configured outside a module class (YAML), or the "
            "strategy is sharded (FSDP, DeepSpeed: a `strategy=` name or class) or decided at "
            "run time (a variable, `**kwargs`), where the helper would raise if the run shards.",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Rewrites `fused=True` to `fused=False` where the optimizer is built, usually in "
            "`configure_optimizers`, or in a LightningCLI / Hydra config. Used by `auto` "
            "where `unscale` does not apply.",
        ),
        Strategy.BF16.value: (
            "Not a fix on the Trainer path of Lightning <= 2.6.6: it refuses to clip "
            "fused optimizers under bf16-mixed too, so the tool refuses, explains and "
            "leaves the code (use `unscale` or `unfuse`). On a later target version "
            "(`--lightning-version`): unsafe (runs only when asked for by name): "
            f"{SAFETY[Strategy.BF16]}."
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Only where user code calls `self.clip_gradients(...)`: wraps it in "
            "`if can_clip_gradients(self.trainer.precision_plugin, optimizer):`. "
            "Clipping that comes from `Trainer(gradient_clip_val=...)` has no call to "
            "guard (use `unfuse`).",
        ),
    },
)
