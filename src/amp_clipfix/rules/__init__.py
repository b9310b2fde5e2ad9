"""The rules, one module each (`acfNNN.py`, found here by name: adding a rule is adding its
module, see CONTRIBUTING.md), and what turns their findings into `Finding`s.

The registry imports a rule's module (and with it the analysis its search reads) when the rule
is first asked for: a run decides which rules search a project from their gates
(rules/gates.py, written from the modules), and imports only the rules it runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING

from amp_clipfix.analysis.link import sort_key
from amp_clipfix.models import ALL_CODES, Confidence, FileSites, Finding, Fix, Site
from amp_clipfix.project.version import Target
from amp_clipfix.records import replace
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
from amp_clipfix.rules.gate import Gate
from amp_clipfix.rules.gates import GATES

if TYPE_CHECKING:
    from amp_clipfix.analysis.bodies import Bodies
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
    """The rule modules of this package (`acf001`, ...), in code order: what rules/gates.py is
    written from (scripts/rule_gates.py). A run looks its rules up by code, so never lists
    them (nor imports pkgutil)."""
    import pkgutil

    return sorted(
        name for _, name, _ in pkgutil.iter_modules(__path__) if re.fullmatch(r"acf\d{3}", name)
    )


class Registry(MutableMapping[str, Rule]):
    """The rules by code, in code order: rules/gates.py's codes, each module's `RULE` imported
    when its code is first looked up (a rule set here, a test's, is kept as given). Iterating
    the codes or asking `in` imports no rule; `values()` imports them all."""

    def __init__(self, codes: Iterable[str]) -> None:
        self._codes = dict.fromkeys(codes)  # the shipped rules not looked up yet, or left
        self._rules: dict[str, Rule] = {}

    def __getitem__(self, code: str) -> Rule:
        rule = self._rules.get(code)
        if rule is None:
            if code not in self._codes:
                raise KeyError(code)
            # the import statement's own path: `python -X importtime` lists the module
            module = __import__(f"{__name__}.{code.lower()}", fromlist=["RULE"])
            rule = self._rules[code] = module.RULE
        return rule

    def __setitem__(self, code: str, rule: Rule) -> None:
        self._rules[code] = rule

    def __delitem__(self, code: str) -> None:
        if code not in self:
            raise KeyError(code)
        self._codes.pop(code, None)
        self._rules.pop(code, None)

    def __contains__(self, code: object) -> bool:
        return code in self._codes or code in self._rules

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._codes, *self._rules]))

    def __len__(self) -> int:
        return len({*self._codes, *self._rules})

    def gate(self, code: str) -> Rule | Gate:
        """What the rule needs of a project before it searches: its rule where that is made
        (or was set), else its gate (rules/gates.py), without importing its module."""
        return self._rules.get(code) or GATES.get(code) or self[code]


# The one registry every command reads: each module's `RULE`, in code order.
RULES = Registry(GATES)


def find_findings(
    files: Sequence[FileSites],
    target: Target,
    rules: Sequence[Rule] | None = None,
    facts: ProjectFacts | None = None,
    bodies: Bodies | None = None,
) -> list[Finding]:
    """All findings of one project on its target Lightning release(s), in a deterministic order;
    the rules that ask the project's facts run when the `facts` are given. `bodies`: the run's
    unread function bodies, let go before a rule once those noted since the last let-go span
    `HELD_LINES` (analysis/bodies.py): a later rule often reads what an earlier one parsed."""
    from amp_clipfix.analysis.bodies import HELD_LINES

    chosen = list(RULES.values() if rules is None else rules)
    queries = Queries(files, target, facts)
    findings: list[Finding] = []
    for rule in chosen:
        if rule.check is not None and (facts is not None or not rule.asks_facts):
            if bodies is not None:
                bodies.let_go(HELD_LINES)  # the bodies nothing read, past the bound
            findings.extend(found_finding(rule, found) for found in rule.check(queries))
    return findings_order(findings)


def findings_order(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in the report's order (a rule's own, in the order it found them, stay so)."""
    return sorted(findings, key=lambda f: (*sort_key(f.sites[0]), f.code, *map(sort_key, f.sites)))


def searching_rules() -> list[Rule | Gate]:
    """The rules that ask the project's facts (the pipeline gives them the facts), as their
    gates: what each needs of a project before it is imported."""
    return [gate for gate in map(RULES.gate, RULES) if gate.asks_facts]


def checking_rules(searching: Iterable[str]) -> list[Rule | Gate]:
    """The rules a project's run asks, in code order: every rule with a check and no words
    (it reads the collected sites), and the rules with words in `searching` (their gates let
    them search the project). A searching rule is given as its gate, its module imported
    only when its search runs (`ruled`): a warm run that reuses every search's answer imports
    none of them (~20 ms of modules on fairseq)."""
    wanted = set(searching)
    return [
        gate if gate.asks_facts else RULES[code]
        for code, gate in zip(RULES, map(RULES.gate, RULES))
        if gate.checks and (not gate.asks_facts or code in wanted)
    ]


def ruled(chosen: Iterable[Rule | Gate]) -> list[Rule]:
    """The rules of `chosen` (checking_rules's), each gate's module imported."""
    return [RULES[rule.code] if isinstance(rule, Gate) else rule for rule in chosen]


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
        code
        for code in RULES
        if RULES.gate(code).alias and (reaches := RULES[code].reaches) and reaches(finding)
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
