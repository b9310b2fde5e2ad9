"""Choose the fix for each finding from the strategy and the target Lightning version.

A fix only rewrites sites whose value is written in the code; what depends on a run-time value
is left to a person (the finding says what to decide). DESIGN.md §2 has the strategy table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from amp_clipfix.analysis import names
from amp_clipfix.models import Finding, Fix, LightningPath, Site, SiteKind, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.strategies import SAFETY


def choose_fixes(findings: Sequence[Finding], strategy: Strategy, target: Target) -> list[Finding]:
    return [choose_fix(finding, strategy, target) for finding in findings]


def choose_fix(finding: Finding, strategy: Strategy, target: Target) -> Finding:
    if finding.suppressed:
        return finding
    if strategy is Strategy.AUTO:
        order = (
            (Strategy.BF16, Strategy.UNFUSE)
            if finding.lightning_path is LightningPath.FABRIC
            else (Strategy.UNFUSE,)
        )
        chosen = [choose_fix(finding, candidate, target) for candidate in order]
        resolved = [option for option in chosen if option.resolved]
        partial = [option for option in chosen if option.fix is not None]
        return (resolved or partial or chosen)[0]
    targets, refusal = fix_targets(finding, strategy, target)
    if refusal is not None:
        return replace(finding, refusal=refusal)
    kind = targets[0].kind
    leftover = tuple(site for site in finding.sites if site.kind is kind and site not in targets)
    return replace(finding, fix=Fix(strategy, targets, SAFETY[strategy], leftover))


def fix_targets(
    finding: Finding, strategy: Strategy, target: Target
) -> tuple[tuple[Site, ...], str | None]:
    """The sites the strategy rewrites, or why it does not apply to this finding."""
    sites = finding.sites
    trainer = finding.lightning_path is LightningPath.TRAINER
    if strategy is Strategy.BF16:
        if trainer and target.trainer_refuses_without_scaler:
            return (), (
                f"bf16 is not a fix on the Trainer path of Lightning {target.version_label}: "
                "it refuses to clip fused optimizers under bf16-mixed too; use --strategy unfuse"
            )
        if target.bf16_precision != "bf16-mixed":
            return (), (
                f"Lightning {target.version_label} includes 1.x releases, which spell bf16 "
                'as "bf16", not "bf16-mixed"; use --strategy unfuse'
            )
        kind = SiteKind.TRAINER_PRECISION if trainer else SiteKind.FABRIC_PRECISION
        targets = fixable(sites, kind, lambda s: s.value in names.SCALER_PRECISIONS)
        return targets, None if targets else "the precision is not written as a literal to rewrite"
    if strategy is Strategy.UNFUSE:
        targets = fixable(sites, SiteKind.FUSED_OPTIMIZER, lambda s: s.value == "True")
        return targets, None if targets else "fused is not written as a literal True to rewrite"
    kind = SiteKind.MODULE_CLIP if trainer else SiteKind.FABRIC_CLIP
    targets = fixable(sites, kind, lambda s: True)
    if targets:
        return targets, None
    if trainer and not any(s.kind is SiteKind.MODULE_CLIP for s in sites):
        return (), (
            "clipping comes only from Trainer(gradient_clip_val=...): there is no clip call to "
            "guard; use --strategy unfuse"
        )
    return (), "the clip call is not a plain statement or assignment that can be guarded"


def fixable(
    sites: Sequence[Site], kind: SiteKind, accept: Callable[[Site], bool]
) -> tuple[Site, ...]:
    return tuple(site for site in sites if site.kind is kind and site.fixable and accept(site))
