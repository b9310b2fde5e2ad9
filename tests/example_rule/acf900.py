"""ACF900 (an example, not shipped): Fabric clips a fused optimizer under bf16-mixed precision.

CONTRIBUTING.md walks through this module: a rule is its code, name, message, level, page, the
fix safety of each strategy and a search over the sites the analysis already collects. Lightning
accepts this code today (bf16-mixed has no GradScaler, so nothing refuses to unscale), but the
same file raises ACF001's error as soon as the precision becomes `16-mixed`, which is what people
switch to on GPUs without bf16 (V100, T4): hence a warning, not an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from amp_clipfix.analysis.link import of_kind, sort_key
from amp_clipfix.models import Certainty, FileSites, Finding, LightningPath, SiteKind, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.rules import acf001
from amp_clipfix.rules.base import FABRIC_ERROR, Found, Rule, safety
from amp_clipfix.rules.clip_fused import Targets

BF16_PRECISIONS = frozenset({"bf16", "bf16-mixed"})

MESSAGE = (
    "Fabric clips gradients of a fused optimizer under bf16-mixed precision: it works, but "
    "Lightning raises NotImplementedError once the precision becomes 16-mixed"
)

# ACF001's example, one word apart: the file that raises once the precision becomes 16-mixed.
BEFORE = acf001.BEFORE.replace('"16-mixed"', '"bf16-mixed"')


def find(files: Sequence[FileSites], target: Target) -> Iterator[Found]:
    """One finding per module where a bf16 Fabric precision, a fused optimizer and a Fabric clip
    call are all written out (known sites only, so it is always certain)."""
    for file in files:
        known = [site for site in file.sites if site.certainty is Certainty.KNOWN]
        precision = of_kind(known, SiteKind.FABRIC_PRECISION)
        bf16 = tuple(site for site in precision if site.value in BF16_PRECISIONS)
        optimizers = of_kind(known, SiteKind.FUSED_OPTIMIZER)
        clips = of_kind(known, SiteKind.FABRIC_CLIP)
        if bf16 and optimizers and clips:
            yield Found(tuple(sorted((*bf16, *optimizers, *clips), key=sort_key)))


def targets(finding: Finding, strategy: Strategy, target: Target) -> Targets:
    """ACF001's codemods on the same sites (`unfuse` the literal, `guard` the clip call); `bf16`
    has nothing to rewrite here."""
    if strategy is Strategy.BF16:
        return (), "the precision already is bf16-mixed: there is nothing to rewrite"
    return acf001.targets(finding, strategy, target)


RULE = Rule(
    code="ACF900",
    name="fabric-clip-fused-bf16",
    message=MESSAGE,
    level="warning",
    lightning_path=LightningPath.FABRIC,
    find=find,
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
