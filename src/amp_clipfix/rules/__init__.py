"""The rules, one module each (`acfNNN.py`, found here by name: adding a rule is adding its
module, see CONTRIBUTING.md), and what turns their findings into `Finding`s.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from amp_clipfix.analysis.link import sort_key
from amp_clipfix.models import ALL_CODES, Confidence, FileSites, Finding, Fix, Site
from amp_clipfix.project.version import Target
from amp_clipfix.rules.base import (
    HOMEPAGE,
    Found,
    Queries,
    Rule,
    RuleFix,
    help_uri,
    render_release_table,
    render_rule,
)

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import ProjectFacts

__all__ = [
    "HOMEPAGE",
    "RULES",
    "Found",
    "Queries",
    "Rule",
    "RuleFix",
    "codes_of",
    "find_findings",
    "findings_order",
    "help_uri",
    "level_of",
    "render_release_table",
    "render_rule",
]


def _rule_modules() -> list[str]:
    """The rule modules of this package (`acf001`, ...), in code order."""
    return sorted(
        name for _, name, _ in pkgutil.iter_modules(__path__) if re.fullmatch(r"acf\d{3}", name)
    )


# The one registry every command reads: each module's `RULE`, in code order.
RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (importlib.import_module(f"{__name__}.{name}").RULE for name in _rule_modules())
}


def find_findings(
    files: Sequence[FileSites],
    target: Target,
    rules: Sequence[Rule] | None = None,
    facts: ProjectFacts | None = None,
) -> list[Finding]:
    """All findings of one project on its target Lightning release(s), in a deterministic order;
    the rules that ask the project's facts run when the `facts` are given."""
    chosen = list(RULES.values() if rules is None else rules)
    queries = Queries(files, target, facts)
    findings = [
        found_finding(rule, found)
        for rule in chosen
        if rule.check is not None and (facts is not None or not rule.asks_facts)
        for found in rule.check(queries)
    ]
    return findings_order(findings)


def findings_order(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in the report's order (a rule's own, in the order it found them, stay so)."""
    return sorted(findings, key=lambda f: (*sort_key(f.sites[0]), f.code, *map(sort_key, f.sites)))


def searching_rules(rules: Sequence[Rule] | None = None) -> list[Rule]:
    """The rules that ask the project's facts (the pipeline gives them the facts)."""
    return [rule for rule in (RULES.values() if rules is None else rules) if rule.asks_facts]


def found_finding(rule: Rule, found: Found) -> Finding:
    """The `Finding` of one `Found`: the rule's code and message, its fixes offered."""
    assert rule.lightning_path is not None, "a rule with a search names its Lightning path"
    sites = tuple(sorted(set(found.sites), key=sort_key))
    message = rule.message if found.condition is None else f"{rule.message}, if {found.condition}"
    finding = Finding(
        rule.code,
        rule.lightning_path,
        message,
        found.confidence,
        sites,
        review=found.review,
        notes=site_notes(sites),
        offers=tuple(offered(fix, sites) for fix in found.fixes),
        refusal=None if found.fixes else found.unfixed,
    )
    return replace(finding, suppressed=is_suppressed(codes_of(finding), sites))


def codes_of(finding: Finding) -> tuple[str, ...]:
    """The codes that name a finding: its rule's, then every alias that reaches it (ACF003 for
    the review findings of ACF001 and ACF002). Suppressions and `--select` / `--ignore` read
    these."""
    aliases = sorted(
        rule.code for rule in RULES.values() if rule.reaches is not None and rule.reaches(finding)
    )
    return (finding.code, *aliases)


def level_of(finding: Finding) -> str:
    """The level of a finding in every machine format (SARIF level, GitHub annotation,
    reviewdog and GitLab severity): its rule's level, and at most `warning` where a person
    must review it (the rule's `review_level` when it names one): severity follows confidence."""
    rule = RULES[finding.code]
    if finding.confidence == Confidence.REVIEW:
        if rule.review_level is not None:
            return rule.review_level
        return "warning" if rule.level == "error" else rule.level
    return rule.level


def offered(fix: RuleFix, sites: Sequence[Site]) -> Fix:
    targets = fix.targets or tuple(sites[:1])
    return Fix(fix.strategy, targets, fix.safety, safe=fix.safe, edits=fix.edits)


def site_notes(sites: Sequence[Site]) -> tuple[str, ...]:
    """What the analysis says about a site's place (e.g. that it serves other callers too)."""
    return tuple(sorted({site.note for site in sites if site.note}))


def is_suppressed(codes: Sequence[str], sites: Sequence[Site]) -> bool:
    """A suppression comment on any line of any of the finding's sites, naming one of its
    `codes` (or none), silences it."""
    return any(
        site.suppressed_codes
        and (
            ALL_CODES in site.suppressed_codes
            or any(code in site.suppressed_codes for code in codes)
        )
        for site in sites
    )
