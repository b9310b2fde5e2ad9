"""ACF002: the Trainer clips the gradients of a fused optimizer under mixed precision."""

from __future__ import annotations

from amp_clipfix.analysis.link import trainer_groups
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

RULE = Rule(
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
        "`bf16-mixed` too) that clips gradients (`gradient_clip_val` > 0, or a "
        "LightningModule calling `self.clip_gradients(...)`), and a LightningModule "
        "subclass in the same project whose methods build an optimizer with "
        "`fused=True`. Every mixed-precision Trainer is assumed to train every "
        "LightningModule of the project. Lightning raises RuntimeError when it clips."
    ),
    example_before=BEFORE,
    example_after=BEFORE.replace("fused=True", "fused=False"),
    fix_safety={
        Strategy.BF16.value: (
            "Not a fix on the Trainer path of Lightning <= 2.6.6: it refuses to clip "
            "fused optimizers under bf16-mixed too, so the tool refuses, explains and "
            "leaves the code (use `unfuse`). On a later target version "
            "(`--lightning-version`): "
            f"{SAFETY[Strategy.BF16]}."
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "The default (`auto`). Rewrites `fused=True` to `fused=False` where the "
            "optimizer is built, usually in `configure_optimizers`.",
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
