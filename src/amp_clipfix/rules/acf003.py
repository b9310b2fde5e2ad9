"""ACF003: the ACF001 or ACF002 pattern where a piece is decided at run time (review).

No search of its own: a finding of the other rules becomes this one when one of its pieces is not
written as a literal, and says what a person must decide.
"""

from __future__ import annotations

from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE
from amp_clipfix.models import Strategy
from amp_clipfix.rules import acf001, acf002
from amp_clipfix.rules.base import Rule, safety

# What each unknown piece must turn out to be for Lightning to raise.
CONDITIONS = {
    "the precision": "the precision chosen at run time is mixed",
    "whether the optimizer is fused": "the optimizer is fused",
    "whether gradients are clipped": "gradients are clipped",
    "which module the Trainer trains": "the Trainer trains this module",
}

WHY = f"On the Fabric path:\n\n{acf001.WHY}\n\nOn the Trainer path:\n\n{acf002.WHY}"

BEFORE = """\
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

# What `amp-clipfix apply` (strategy auto: unscale) makes of BEFORE; a test keeps it true.
EXAMPLE_AFTER = (
    """\
import torch
from lightning.fabric import Fabric


"""
    + FABRIC_HELPER_SOURCE
    + """

def train(model, precision):
    fabric = Fabric(precision=precision)  # "16-mixed"? "bf16-mixed"? "32-true"?
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    ...
    clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)
    optimizer.step()
"""
)

RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code="ACF003",
    message="a piece of ACF001 or ACF002 is decided at run time",
    why=WHY,
    level="warning",
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
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`) where it applies. Its helper decides at run time, so it is "
            "correct whatever the run-time precision, clip value or `fused` flag turn out to be "
            "(the override clips only when Lightning passes a value > 0); it is refused when "
            "the strategy is decided at run time (it may shard the model).",
        ),
        Strategy.BF16.value: safety(
            Strategy.BF16,
            "Applies only when the precision itself is written as a literal, and never "
            "on the Trainer path of Lightning <= 2.6.6 (see ACF002).",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Applies when `fused=True` is written as a literal: it is safe whatever "
            "the run-time precision turns out to be. `auto` picks it where `unscale` does "
            "not apply.",
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Applies where the clip call is a plain statement or assignment (an assigned "
            "result stays usable); the helper "
            "decides at run time, so it skips clipping only where Lightning would raise.",
        ),
    },
)
