"""Choose the fix for each finding from the strategy and the target Lightning version.

A fix only rewrites sites whose value is written in the code; what depends on a run-time value
is left to a person (the finding says what to decide). The exception is `unscale`: its helper
decides at run time, so it also fixes a finding whose precision or `fused` flag is decided then.
`auto` picks `unscale` where it applies, else `unfuse`: never an unsafe fix (bf16, guard), which
run only when asked for by name. A rule is only ever fixed by the strategies its page lists
(`fix_safety`). DESIGN.md §2 has the strategy table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from amp_clipfix.analysis import names
from amp_clipfix.models import (
    Certainty,
    Finding,
    Fix,
    LightningPath,
    Sharding,
    Site,
    SiteKind,
    Strategy,
)
from amp_clipfix.project.version import Target
from amp_clipfix.rules import RULES
from amp_clipfix.strategies import AUTO_ORDER, SAFETY, is_safe


def choose_fixes(findings: Sequence[Finding], strategy: Strategy, target: Target) -> list[Finding]:
    return joined([choose_fix(finding, strategy, target) for finding in findings])


def joined(findings: list[Finding]) -> list[Finding]:
    """A rule's offer without edits joins another finding's chosen codemod on the same call: it
    is taken (in place of the rule's own edit, or of no fix) only where that codemod rewrites
    every site it names, so one call is rewritten once (ACF007 on a call ACF001's `unscale`
    helper replaces); it is never chosen on its own."""
    rewritten = {
        (finding.fix.strategy, site.path, site.span.line, site.span.column)
        for finding in findings
        if finding.fix is not None and not finding.fix.edits
        for site in finding.fix.targets
    }
    result = []
    for finding in findings:
        fix = finding.fix
        if fix is None or fix.edits:
            for offer in finding.offers:
                if not offer.edits and all(
                    (offer.strategy, s.path, s.span.line, s.span.column) in rewritten
                    for s in offer.targets
                ):
                    finding = replace(finding, fix=offer, refusal=None)
                    break
        result.append(finding)
    return result


def choose_fix(finding: Finding, strategy: Strategy, target: Target) -> Finding:
    if finding.suppressed:
        return finding
    rule = RULES.get(finding.code)
    if finding.offers or (rule is not None and rule.search is not None):
        return choose_offered(finding, strategy)
    offered = RULES[finding.code].fix_safety if finding.code in RULES else None
    if strategy is Strategy.AUTO:
        order = [c for c in AUTO_ORDER if offered is None or c.value in offered]
        chosen = [choose_fix(finding, candidate, target) for candidate in order] or [finding]
        resolved = [option for option in chosen if option.resolved]
        partial = [option for option in chosen if option.fix is not None]
        return (resolved or partial or chosen)[0]
    if offered is not None and strategy.value not in offered:
        return replace(finding, refusal=f"{finding.code} offers no {strategy.value} fix")
    targets, refusal = fix_targets(finding, strategy, target)
    if refusal is not None:
        return replace(finding, refusal=refusal)
    kind = targets[0].kind
    leftover = tuple(site for site in finding.sites if site.kind is kind and site not in targets)
    fix = Fix(strategy, targets, SAFETY[strategy], leftover, safe=is_safe(strategy))
    return replace(finding, fix=fix)


def choose_offered(finding: Finding, strategy: Strategy) -> Finding:
    """A rule with its own search offers its fixes: `auto` takes the first safe one, a named
    strategy the one it names."""
    offers = [fix for fix in finding.offers if fix.edits]  # the others only join (`joined`)
    if strategy is Strategy.AUTO:
        safe = [fix for fix in offers if fix.safe]
        if safe:
            return replace(finding, fix=safe[0])
        return (
            finding
            if finding.refusal or not offers
            else replace(
                finding, refusal=f"{finding.code} offers no safe fix here; name one with --strategy"
            )
        )
    named = [fix for fix in offers if fix.strategy is strategy]
    if named:
        return replace(finding, fix=named[0])
    if finding.refusal:
        return finding
    return replace(finding, refusal=f"{finding.code} offers no {strategy.value} fix here")


def fix_targets(
    finding: Finding, strategy: Strategy, target: Target
) -> tuple[tuple[Site, ...], str | None]:
    """The sites the strategy rewrites, or why it does not apply to this finding."""
    sites = finding.sites
    trainer = finding.lightning_path is LightningPath.TRAINER
    if strategy is Strategy.UNSCALE:
        return unscale_targets(finding, target)
    if strategy is Strategy.BF16:
        if trainer and target.trainer_refuses_without_scaler:
            return (), (
                f"bf16 is not a fix on the Trainer path of Lightning {target.version_label}: "
                "it refuses to clip fused optimizers under bf16-mixed too; "
                "use --strategy unscale or --strategy unfuse"
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
            "guard; use --strategy unscale or --strategy unfuse"
        )
    return (), "the clip call is not a plain statement or assignment that can be guarded"


def fixable(
    sites: Sequence[Site], kind: SiteKind, accept: Callable[[Site], bool]
) -> tuple[Site, ...]:
    return tuple(site for site in sites if site.kind is kind and site.fixable and accept(site))


def unscale_targets(finding: Finding, target: Target) -> tuple[tuple[Site, ...], str | None]:
    """Fabric: every clip call. Trainer: the LightningModule classes that build the fused
    optimizer (marked by its sites) and their `self.clip_gradients(...)` calls."""
    sites = finding.sites
    trainer = finding.lightning_path is LightningPath.TRAINER
    if trainer and target.clip_hook_takes_optimizer_idx is None:
        return (), (
            f"Lightning {target.version_label} spans 1.x and 2.x, whose "
            "configure_gradient_clipping signatures differ (optimizer_idx); pin one line, or "
            "use --strategy unfuse"
        )
    refusal = sharding_refusal(sites)
    if refusal is not None:
        return (), refusal
    if finding.lightning_path is LightningPath.FABRIC:
        clips = tuple(s for s in sites if s.kind is SiteKind.FABRIC_CLIP)
        if any(clip.certainty is Certainty.RUNTIME for clip in clips):
            return (), (
                "the clip's receiver is not known to be a Fabric (only its name says so): the "
                "helper needs a Fabric; use --strategy unfuse"
            )
        return clips, None
    classes = tuple(
        s
        for s in sites
        if s.kind is SiteKind.FUSED_OPTIMIZER
        and s.owner is not None
        and not s.in_config
        and in_the_module_class(s)
    )
    if not classes:
        classes = factory_classes(finding)
    if not classes:
        return (), (
            "no LightningModule class is known to build the fused optimizer (it is configured "
            "in YAML, or built by a method of another class, or its module class lives in a "
            "file this finding does not read), so there is no class to give a "
            "configure_gradient_clipping override; use --strategy unfuse"
        )
    class_keys = {f"{s.path}::{s.owner}" for s in classes}
    if any(calls_clip_from_outside(site, class_keys) for site in sites):
        return (), (
            "clip_gradients is called from outside the module class (a Callback or another "
            "object): an override cannot reroute that call; use --strategy unfuse"
        )
    return classes + tuple(s for s in sites if s.kind is SiteKind.MODULE_CLIP), None


def sharding_refusal(sites: Sequence[Site]) -> str | None:
    """The inserted helper raises under a sharded strategy (FSDP, DeepSpeed clip differently);
    where the strategy is decided at run time, `unfuse` is right for every strategy."""
    shardings = {site.sharding for site in sites}
    if Sharding.SHARDED in shardings:
        return (
            "the strategy shards the model (FSDP, DeepSpeed): sharded strategies clip "
            "differently, so clipping through the scaler does not apply; use --strategy unfuse"
        )
    if Sharding.UNKNOWN in shardings:
        return (
            "the strategy is decided at run time: under a sharded one (FSDP, DeepSpeed) the "
            "inserted helper raises; use --strategy unfuse, which is right for every strategy"
        )
    return None


def factory_classes(finding: Finding) -> tuple[Site, ...]:
    """An optimizer built by a function (a factory, a default, a constant) that the module
    class's own methods call: the override goes into that class (`Site.built_in`). The targets
    are the optimizer sites (which mark no class: they are in a function) and one anchor per
    class, at its `class` statement, in a file the finding already reads."""
    optimizers = [s for s in finding.sites if s.kind is SiteKind.FUSED_OPTIMIZER]
    if not optimizers or any(s.in_config or s.owner is not None for s in optimizers):
        return ()
    read = {site.path for site in finding.sites}
    homes = sorted({home for site in optimizers for home in site.built_in})
    if not homes or any(home.path not in read for home in homes):
        return ()
    anchors = tuple(
        replace(optimizers[0], path=home.path, span=home.span, owner=home.name, fixable=False)
        for home in homes
    )
    return (*optimizers, *anchors)


def in_the_module_class(site: Site) -> bool:
    """The override goes into the class around the site: only right when that class is the one
    that uses the optimizer. A value decided elsewhere (a constant, a factory's default, a mixin
    that may come after LightningModule in the bases) names its users instead."""
    return not site.users or f"{site.path}::{site.owner}" in site.users


def calls_clip_from_outside(site: Site, class_keys: set[str]) -> bool:
    """A `x.clip_gradients(...)` call outside the module classes (a Callback's hook): Lightning
    runs it without passing through `configure_gradient_clipping`."""
    return (
        site.kind in (SiteKind.MODULE_CLIP, SiteKind.TRAINER_CLIP)
        and site.clip_call
        and f"{site.path}::{site.owner}" not in class_keys
    )
