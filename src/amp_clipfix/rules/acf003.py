"""ACF003: an alias for the review findings of ACF001 and ACF002 (a piece decided at run time).

No finding carries this code: a finding of ACF001 or ACF002 one of whose pieces is not written
as a literal keeps its own code with confidence `review` and says what a person must decide.
`ACF003` stays a code users write (suppression comments, `--select` / `--ignore`, the
configuration), and reaches exactly those findings.
"""

from __future__ import annotations

from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE
from amp_clipfix.models import Confidence, Finding, Strategy
from amp_clipfix.rules.base import Rule, safety
from amp_clipfix.rules.clip_fused import FABRIC_CODE, FABRIC_WHY, TRAINER_CODE, TRAINER_WHY


def reaches(finding: Finding) -> bool:
    """The findings `ACF003` names: the review findings of ACF001 and ACF002."""
    return finding.code in (FABRIC_CODE, TRAINER_CODE) and finding.confidence == Confidence.REVIEW


WHY = f"On the Fabric path:\n\n{FABRIC_WHY}\n\nOn the Trainer path:\n\n{TRAINER_WHY}"

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
    reaches=reaches,
    why=WHY,
    level="warning",
    name="clip-fused-decided-at-run-time",
    short=(
        "Alias of the ACF001 / ACF002 findings where a piece is decided at run time "
        "(confidence review): gradient clipping on a fused optimizer under mixed precision."
    ),
    full=(
        "An alias, not a finding of its own: the ACF001 or ACF002 pattern where the precision, "
        "the `fused` flag, the clipping or the module a Trainer trains is not written as a "
        "literal (`Fabric(precision=args.precision)`, `fused` passed through `**kwargs` or "
        "`functools.partial`, `Trainer(**params)`, YAML configs) is reported under its own "
        "code, ACF001 or ACF002, with confidence `review` (a SARIF / GitHub `warning`) and a "
        "`review:` line that says what a person must decide. `ACF003` names exactly those "
        "findings: `# amp-clipfix: ignore[ACF003]` or `# noqa: ACF003` on a line of one of "
        "their sites, `--select ACF003`, `--ignore ACF003` and `select` / `ignore` in the "
        "configuration; `ACF001` / `ACF002` name them too. Lightning raises only if the "
        "run-time values complete the pattern. A fix is applied only when it does not depend "
        "on the unknown piece."
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
