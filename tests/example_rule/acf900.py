"""ACF900 (an example, not shipped): Fabric clips a fused optimizer under bf16-mixed precision.

CONTRIBUTING.md walks through this module: a rule is one module with its page (code, name,
message, level, texts), the facts it needs (none here beyond the sites the analysis already
collects: no `words`), one `check` that asks a project's `Queries` and yields its findings, and
its fixes per strategy (here `targets`: the sites the shared codemods rewrite). It imports no
other rule: what it shares with ACF001 comes from rules/clip_fused.py and rules/base.py. Lightning
accepts this code today (bf16-mixed has no GradScaler, so nothing refuses to unscale), but the
same file raises ACF001's error as soon as the precision becomes `16-mixed`, which is what people
switch to on GPUs without bf16 (V100, T4): hence a warning, not an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from amp_clipfix.analysis.link import of_kind, sort_key
from amp_clipfix.models import Certainty, Finding, LightningPath, SiteKind, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.rules.base import FABRIC_ERROR, Found, Queries, Rule, safety
from amp_clipfix.rules.clip_fused import Targets, fixable, unfuse_targets

BF16_PRECISIONS = frozenset({"bf16", "bf16-mixed"})

MESSAGE = (
    "Fabric clips gradients of a fused optimizer under bf16-mixed precision: it works, but "
    "Lightning raises NotImplementedError once the precision becomes 16-mixed"
)

# ACF001's example, one word apart: the file that raises once the precision becomes 16-mixed.
BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="bf16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
fabric.clip_gradients(model, optimizer, max_norm=1.0)
optimizer.step()
"""


def check(queries: Queries) -> Iterator[Found]:
    """One finding per module where a bf16 Fabric precision, a fused optimizer and a Fabric clip
    call are all written out (known sites only, so it is always certain)."""
    for file in queries.sites:
        known = [site for site in file.sites if site.certainty is Certainty.KNOWN]
        precision = of_kind(known, SiteKind.FABRIC_PRECISION)
        bf16 = tuple(site for site in precision if site.value in BF16_PRECISIONS)
        optimizers = of_kind(known, SiteKind.FUSED_OPTIMIZER)
        clips = of_kind(known, SiteKind.FABRIC_CLIP)
        if bf16 and optimizers and clips:
            yield Found(tuple(sorted((*bf16, *optimizers, *clips), key=sort_key)))


def targets(finding: Finding, strategy: Strategy, target: Target) -> Targets:
    """Per strategy, the sites its shared codemod rewrites: `unfuse` the `fused=True` literals,
    `guard` the clip calls; `bf16` has nothing to rewrite here."""
    if strategy is Strategy.UNFUSE:
        return unfuse_targets(finding.sites)
    if strategy is Strategy.GUARD:
        clips = fixable(finding.sites, SiteKind.FABRIC_CLIP, lambda site: True)
        return clips, None if clips else "the clip call is no plain statement to guard"
    if strategy is Strategy.BF16:
        return (), "the precision already is bf16-mixed: there is nothing to rewrite"
    return (), f"{finding.code} offers no {strategy.value} fix"


RULE = Rule(
    code="ACF900",
    name="fabric-clip-fused-bf16",
    message=MESSAGE,
    level="warning",
    lightning_path=LightningPath.FABRIC,
    check=check,  # no `words`: it asks only the collected sites (`queries.sites`)
    targets=targets,
    short="Fabric clips gradients of a fused optimizer under bf16-mixed: fails under 16-mixed.",
    full=(
        "Within one module, a Fabric with precision `bf16-mixed` (or `bf16`), an optimizer built "
        "with `fused=True` and a `clip_gradients(...)` call on the Fabric object, all written as "
        "literals. Lightning runs it; switching the precision to `16-mixed` makes it ACF001."
    ),
    why=(
        "Under `bf16-mixed` Fabric uses no GradScaler, so clipping a fused optimizer works. Under "
        "`16-mixed` (the usual choice on GPUs without bf16) a GradScaler is in play and "
        "`fabric.clip_gradients(...)` raises:\n\n"
        f"    {FABRIC_ERROR}"
    ),
    example_before=BEFORE,
    example_after=BEFORE.replace("fused=True", "fused=False"),
    fix_safety={
        Strategy.BF16.value: (
            "Not a fix: the precision already is bf16-mixed, so there is nothing to rewrite."
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "The default (`auto`). Rewrites `fused=True` to `fused=False`, so a later switch "
            "to `16-mixed` cannot raise.",
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Wraps the clip call in `if can_clip_gradients(fabric, optimizer):`, which keeps "
            "clipping under bf16-mixed and skips it where 16-mixed would raise.",
        ),
    },
)
