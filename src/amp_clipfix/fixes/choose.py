"""Choose the fix for each finding from the strategy and the target Lightning version.

A fix only rewrites sites whose value is written in the code; what depends on a run-time value
is left to a person (the finding says what to decide). The exception is `unscale`: its helper
decides at run time, so it also fixes a finding whose precision or `fused` flag is decided then.
`auto` picks `unscale` where it applies, else `unfuse`: never an unsafe fix (bf16, guard), which
run only when asked for by name. A rule is only ever fixed by the strategies its page lists
(`fix_safety`); which sites a strategy's codemod rewrites, or why it does not apply, is the
rule's (`Rule.targets`, e.g. rules/acf002.py). DESIGN.md §2 has the strategy table.
"""

from __future__ import annotations

from collections.abc import Sequence

from amp_clipfix.models import Finding, Fix, Site, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.records import replace
from amp_clipfix.rules import RULES
from amp_clipfix.strategies import AUTO_ORDER, SAFETY, is_safe


def choose_fixes(findings: Sequence[Finding], strategy: Strategy, target: Target) -> list[Finding]:
    return joined([choose_fix(finding, strategy, target) for finding in findings])


def joined(findings: list[Finding]) -> list[Finding]:
    """A rule's offer without edits joins another finding's chosen codemod on the same call: it
    is taken (in place of the rule's own edit, or of no fix) only where that codemod rewrites
    every site it names, so one call is rewritten once (ACF007 on a call ACF001's `unscale`
    helper replaces), or where that codemod removes the GradScaler the offer exists for (ACF007
    on a clip of a Fabric ACF001's `bf16` rewrite leaves without one: `covered`); it is never
    chosen on its own."""
    rewritten = {
        (finding.fix.strategy, site.path, site.span.line, site.span.column)
        for finding in findings
        if finding.fix is not None and not finding.fix.edits
        for site in covered(finding.fix, finding)
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


# Strategies whose codemod takes the GradScaler away from what a finding links (`bf16`: the
# precision becomes bf16-mixed): every site of that finding is then free of the scaler, and the
# scaler's own fixes there (ACF007's `error_if_nonfinite=False`) lose their reason.
REMOVES_SCALER = frozenset({Strategy.BF16})


def covered(fix: Fix, finding: Finding) -> tuple[Site, ...]:
    """The sites a chosen codemod fix settles for the offers that join it: the sites it
    rewrites, and for a complete fix that removes the GradScaler every site of its finding."""
    if fix.strategy in REMOVES_SCALER and not fix.leftover:
        return (*fix.targets, *finding.sites)
    return fix.targets


def choose_fix(finding: Finding, strategy: Strategy, target: Target) -> Finding:
    if finding.suppressed:
        return finding
    if finding.offers:  # its rule's own fixes: its module need not be imported (a reused search)
        return choose_offered(finding, strategy)
    rule = RULES.get(finding.code)
    if rule is not None and rule.writes_fixes:
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
    if rule is None or rule.targets is None:
        return replace(finding, refusal=f"{finding.code} offers no {strategy.value} fix")
    targets, refusal = rule.targets(finding, strategy, target)
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
