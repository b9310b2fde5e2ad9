"""The rule pages, written once: `amp-clipfix explain CODE`, the SARIF rules and the README all
render them from here, so the three never disagree.

Safety texts come from `amp_clipfix.strategies.SAFETY`; a page only adds where a fix applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from amp_clipfix.models import Strategy
from amp_clipfix.strategies import SAFETY

HOMEPAGE = "https://github.com/amp-clipfix/amp-clipfix"

FABRIC_ERROR = (
    "NotImplementedError: Gradient clipping is not implemented for optimizers handling the "
    "unscaling."
)
TRAINER_ERROR = (
    "RuntimeError: The current optimizer, AdamW, does not allow for gradient clipping because it "
    "performs unscaling of gradients internally. HINT: Are you using a 'fused' optimizer?"
)
BF16_SCALER_ERROR = "ValueError: `precision='bf16-mixed'` does not use a scaler"

FIX_ORDER = (Strategy.BF16, Strategy.UNFUSE, Strategy.GUARD)


@dataclass(frozen=True)
class Rule:
    """One finding code: what it detects, why Lightning fails, an example and each fix's safety.

    `fix_safety` maps a strategy value (`bf16`, `unfuse`, `guard`) to where that fix applies for
    this rule and what it changes in behaviour.
    """

    code: str
    name: str
    short: str
    full: str
    example_before: str
    example_after: str
    fix_safety: dict[str, str]


WHY_FABRIC = (
    "Torch's fused optimizers (`fused=True` on Adam, AdamW, SGD, Adagrad) unscale their own "
    'gradients inside `step()`. With a GradScaler in play (precision `16-mixed`, `16` or `"16"`, '
    "or a `MixedPrecision`/`FSDPPrecision` plugin given a scaler), Lightning's "
    "`MixedPrecision.unscale_gradients` refuses to unscale them for clipping, so "
    "`fabric.clip_gradients(...)` raises:\n\n"
    f"    {FABRIC_ERROR}\n\n"
    "Plain torch has no such limit (`GradScaler.unscale_` + `clip_grad_norm_` work with fused "
    "optimizers): the limitation is Lightning's."
)

WHY_TRAINER = (
    "Torch's fused optimizers (`fused=True`) unscale their own gradients inside `step()`. When "
    "the Trainer clips (`gradient_clip_val` > 0, `self.clip_gradients(...)` or a "
    "`configure_gradient_clipping` override), Lightning's `MixedPrecision.clip_gradients` "
    "refuses and raises (with the optimizer's class name):\n\n"
    f"    {TRAINER_ERROR}\n\n"
    "In every release up to 2.6.6 this happens under any `MixedPrecision`: `16-mixed` and "
    "`bf16-mixed` alike. Lightning master (PR #21436, unreleased) raises only when a GradScaler "
    "is present, i.e. under `16-mixed`."
)

FABRIC_BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
fabric.clip_gradients(model, optimizer, max_norm=1.0)
optimizer.step()
"""

TRAINER_BEFORE = """\
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

RUNTIME_BEFORE = """\
import torch
from lightning.fabric import Fabric


def train(model, precision):
    fabric = Fabric(precision=precision)  # "16-mixed"? "bf16-mixed"? "32-true"?
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    ...
    fabric.clip_gradients(model, optimizer, max_norm=1.0)
    optimizer.step()
"""


def _safety(strategy: Strategy, where: str) -> str:
    return f"{where} {SAFETY[strategy][0].upper()}{SAFETY[strategy][1:]}."


RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule(
            code="ACF001",
            name="fabric-clip-fused-fp16",
            short="Fabric clips gradients of a fused optimizer under fp16 mixed precision.",
            full=(
                "Within one module, a Fabric whose precision uses a GradScaler (`16-mixed`, `16`, "
                '`"16"`, or a Fabric `MixedPrecision`/`FSDPPrecision` plugin with a scaler), an '
                "optimizer built with `fused=True` and a `clip_gradients(...)` call on the Fabric "
                "object. Lightning raises NotImplementedError at the clip call."
            ),
            example_before=FABRIC_BEFORE,
            example_after=FABRIC_BEFORE.replace('"16-mixed"', '"bf16-mixed"'),
            fix_safety={
                Strategy.BF16.value: _safety(
                    Strategy.BF16,
                    'The default (`auto`). Rewrites the precision to `"bf16-mixed"`; a plugin '
                    "loses its scaler argument, since bf16-mixed refuses one "
                    f"({BF16_SCALER_ERROR}).",
                ),
                Strategy.UNFUSE.value: _safety(
                    Strategy.UNFUSE,
                    "Rewrites `fused=True` to `fused=False` where the optimizer is built. "
                    "Used by `auto` when the precision is not written as a literal.",
                ),
                Strategy.GUARD.value: _safety(
                    Strategy.GUARD,
                    "Wraps the clip call in `if can_clip_gradients(fabric, optimizer):`, a helper "
                    "inserted once into the module (it imports nothing private).",
                ),
            },
        ),
        Rule(
            code="ACF002",
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
            example_before=TRAINER_BEFORE,
            example_after=TRAINER_BEFORE.replace("fused=True", "fused=False"),
            fix_safety={
                Strategy.BF16.value: (
                    "Not a fix on the Trainer path of Lightning <= 2.6.6: it refuses to clip "
                    "fused optimizers under bf16-mixed too, so the tool refuses, explains and "
                    "leaves the code (use `unfuse`). On a later target version "
                    "(`--lightning-version`): "
                    f"{SAFETY[Strategy.BF16]}."
                ),
                Strategy.UNFUSE.value: _safety(
                    Strategy.UNFUSE,
                    "The default (`auto`). Rewrites `fused=True` to `fused=False` where the "
                    "optimizer is built, usually in `configure_optimizers`.",
                ),
                Strategy.GUARD.value: _safety(
                    Strategy.GUARD,
                    "Only where user code calls `self.clip_gradients(...)`: wraps it in "
                    "`if can_clip_gradients(self.trainer.precision_plugin, optimizer):`. "
                    "Clipping that comes from `Trainer(gradient_clip_val=...)` has no call to "
                    "guard (use `unfuse`).",
                ),
            },
        ),
        Rule(
            code="ACF003",
            name="clip-fused-decided-at-run-time",
            short=(
                "Gradient clipping on a fused optimizer under mixed precision, where a piece is "
                "decided at run time: review needed."
            ),
            full=(
                "The ACF001 or ACF002 pattern where the precision, the `fused` flag or the "
                "clipping is not written as a literal (`Fabric(precision=args.precision)`, "
                "`fused` passed through `**kwargs` or `functools.partial`, `Trainer(**params)`, "
                "YAML configs). Lightning raises only if the run-time values complete the "
                "pattern; the finding says what a person must decide. A fix is applied only "
                "when it does not depend on the unknown piece."
            ),
            example_before=RUNTIME_BEFORE,
            example_after=RUNTIME_BEFORE.replace("fused=True", "fused=False"),
            fix_safety={
                Strategy.BF16.value: _safety(
                    Strategy.BF16,
                    "Applies only when the precision itself is written as a literal, and never "
                    "on the Trainer path of Lightning <= 2.6.6 (see ACF002).",
                ),
                Strategy.UNFUSE.value: _safety(
                    Strategy.UNFUSE,
                    "Applies when `fused=True` is written as a literal: it is safe whatever "
                    "the run-time precision turns out to be. This is what `auto` picks here.",
                ),
                Strategy.GUARD.value: _safety(
                    Strategy.GUARD,
                    "Applies where the clip call is a plain statement or assignment; the helper "
                    "decides at run time, so it skips clipping only where Lightning would raise.",
                ),
            },
        ),
    )
}


WHY = {
    "ACF001": WHY_FABRIC,
    "ACF002": WHY_TRAINER,
    "ACF003": f"On the Fabric path:\n\n{WHY_FABRIC}\n\nOn the Trainer path:\n\n{WHY_TRAINER}",
}


def help_uri(code: str) -> str:
    """The README section of a rule (its heading is the bare code, so the anchor is stable)."""
    return f"{HOMEPAGE}#{code.lower()}"


def render_rule(rule: Rule, heading_level: int = 1) -> str:
    """The rule page as markdown that also reads as plain text; `heading_level` lets the README
    embed pages under its own headings. The title is the bare code, so the anchor is `#acf001`."""
    title = "#" * heading_level
    section = "#" * (heading_level + 1)
    safety = "\n".join(
        f"- `{strategy.value}`: {rule.fix_safety[strategy.value]}" for strategy in FIX_ORDER
    )
    return (
        f"{title} {rule.code}\n\n"
        f"`{rule.name}`: {rule.short}\n\n"
        f"{section} What it detects\n\n{rule.full}\n\n"
        f"{section} Why Lightning fails\n\n{WHY[rule.code]}\n\n"
        f"{section} Example\n\n"
        f"Before:\n\n```python\n{rule.example_before}```\n\n"
        f"After (`amp-clipfix apply`, strategy `auto`):\n\n```python\n{rule.example_after}```\n\n"
        f"{section} Fix safety\n\n{safety}\n\n"
        f"Every fix says in the diff and in machine output what it changes in behaviour. "
        f"Suppress a finding with `# amp-clipfix: ignore[{rule.code}]` on a line of any of its "
        f"sites.\n"
    )
