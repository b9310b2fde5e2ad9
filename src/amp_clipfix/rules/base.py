"""What a rule is, and how its page is rendered.

A rule owns its code, name, message, level, page, the strategies that may fix it and how it finds
its findings; `amp-clipfix explain`, the SARIF rules, GitHub and text output and the docs' rule
pages are all rendered from the rule itself, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from amp_clipfix.models import Confidence, Edit, FileSites, Finding, LightningPath, Site, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.records import field, record
from amp_clipfix.strategies import SAFETY, is_safe

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import ProjectFacts

HOMEPAGE = "https://github.com/amp-clipfix/amp-clipfix"

FABRIC_ERROR = (
    "NotImplementedError: Gradient clipping is not implemented for optimizers handling the "
    "unscaling."
)
TRAINER_ERROR = (
    "RuntimeError: The current optimizer, AdamW, does not allow for gradient clipping because it "
    "performs unscaling of gradients internally. HINT: Are you using a 'fused' optimizer?"
)

# Safe fixes first, in the order `auto` tries them; the unsafe ones run only when named.
FIX_ORDER = (
    Strategy.UNSCALE,
    Strategy.UNFUSE,
    Strategy.MIGRATE,
    Strategy.BF16,
    Strategy.GUARD,
    Strategy.NATIVE,
)


@record(frozen=True)
class RuleFix:
    """One fix a rule with its own search offers for one finding.

    `edits` replace text of the document (character columns, the document's own line endings;
    `ProjectFacts` files make them), `safe` is ruff's fix safety (behaviour and numerics stay
    right for every run-time value), `safety` what it does and changes, shown in the diff view
    and machine output. `strategy` is the `--strategy` it answers to; `auto` takes the first
    safe one.
    """

    strategy: Strategy
    edits: tuple[Edit, ...]
    safe: bool
    safety: str
    targets: tuple[Site, ...] = ()  # the sites it changes (the finding's primary site first)


@record(frozen=True)
class Found:
    """One finding of a rule's own search: its typed sites, its confidence, and its fixes.

    A finding decided at run time keeps the rule's code with `Confidence.REVIEW`, and `review`
    says what a person must decide; offer there only fixes right for every run-time value.
    """

    sites: tuple[Site, ...]
    confidence: Confidence = Confidence.HIGH
    review: str | None = None
    fixes: tuple[RuleFix, ...] = ()
    condition: str | None = None  # appended to the message: "..., if <condition>"
    unfixed: str | None = None  # why no fix is offered, for the report ("no fix: ...")


@record(frozen=True)
class Queries:
    """What a rule's `check` asks of one project: the sites the collection made of its files
    (`analysis/collect.py`), the Lightning release(s) it runs on, and, for a rule with `words`,
    the project's facts (the files holding one of them, their values and the index behind
    them). The pipeline gives `facts` to every rule with words and runs none of them without."""

    sites: Sequence[FileSites]
    target: Target
    project_facts: ProjectFacts | None = None

    @property
    def facts(self) -> ProjectFacts:
        """The project's facts: only a rule with `words` asks (the pipeline gives them)."""
        assert self.project_facts is not None, "a rule without words asks for no facts"
        return self.project_facts


# A rule's one check: the queries of a project in, its findings out.
Check = Callable[[Queries], Iterable[Found]]

# What the shared codemod of a strategy (fixes/codemods) rewrites for one finding of a rule
# whose findings carry no fixes of their own (ACF001, ACF002): its target sites, or why the
# strategy does not apply there.
Targeter = Callable[[Finding, Strategy, Target], tuple[tuple[Site, ...], str | None]]


@record(frozen=True)
class Rule:
    """One finding code and everything said about it.

    Every rule is one interface: its page (the texts below), the facts it needs (`words`,
    `needs`, `requires`), one `check` that asks a project's `Queries` and yields its `Found`s,
    and its fixes per strategy. `fix_safety` maps a strategy value (`unscale`, `unfuse`,
    `bf16`, `guard`, `migrate`) to where that fix applies, whether it is safe and what it
    changes in behaviour; the fixes themselves are either the `RuleFix`es of each `Found` (the
    edits the rule writes) or, for a rule that names `targets` (ACF001, ACF002), the sites the
    shared codemod of a strategy (fixes/codemods) rewrites, or why it does not apply.
    `fixes/choose.py` only picks among the strategies.

    A rule without `words` asks only the collected sites (`queries.sites`); a rule with words
    is given the project's facts (`queries.facts`: the files whose text holds one of its
    words, read and followed), and is skipped where no file holds one.

    An alias (ACF003) has no check: no finding carries its code, and `reaches` says which
    findings of other rules it names in suppression comments, `--select` / `--ignore` and the
    configuration (ACF003: the review findings of ACF001 and ACF002).
    """

    code: str
    name: str
    message: str  # the one line a finding of this rule reports
    short: str
    full: str
    why: str
    example_before: str
    example_after: str
    fix_safety: dict[str, str]
    lightning_path: LightningPath | None = None
    level: str = "error"  # "error" when certain, "warning" when a person must review
    # The level of its findings with confidence `review`; None: `warning` for a rule whose
    # level is `error` (a person decides), else `level` (rules.level_of).
    review_level: str | None = None
    check: Check | None = field(default=None, compare=False)
    targets: Targeter | None = field(default=None, compare=False)
    words: tuple[bytes, ...] = ()  # its check reads the facts of files holding one of these
    # A project none of whose files holds one of these cannot have this rule's finding (its search
    # is not even started); empty: its `words`. Narrower than `words` where the search also reads
    # common context (`.fit(`) but fires only with a rarer word (`automatic_optimization`).
    needs: tuple[bytes, ...] = ()
    # Words each of which some file of the project must hold for this rule to search it at
    # all (and): the name of a library class every finding needs made or declared somewhere
    # (`Fabric`, `GradScaler`: a project that never names one has no such object to follow).
    requires: tuple[bytes, ...] = ()
    # Top-level packages one of which some file must import (an import statement) for this rule
    # to search at all: the packages of that library class (`lightning`, `lightning_fabric`).
    imports: tuple[str, ...] = ()
    why_title: str = "Why Lightning fails"  # the page's heading for `why`
    lines: tuple[str, ...] = ()  # the release lines (`LINES`) whose code it fires on
    reaches: Callable[[Finding], bool] | None = field(default=None, compare=False)

    @property
    def asks_facts(self) -> bool:
        """Its check asks the project's facts (it has words), not only the collected sites."""
        return bool(self.words)

    @property
    def checks(self) -> bool:
        """It has a check (an alias has none); rules/gates.py says it without the module."""
        return self.check is not None

    @property
    def alias(self) -> bool:
        """It names other rules' findings (`reaches`) and finds none of its own."""
        return self.reaches is not None

    @property
    def writes_fixes(self) -> bool:
        """Its findings carry their own fixes (`Found.fixes`), not `targets` for the codemods."""
        return self.check is not None and self.targets is None

    @property
    def needed_words(self) -> tuple[bytes, ...]:
        """The words one of which a project must hold for this rule to search it."""
        return self.needs or self.words


# The release lines of the docs' table of which rule fires where (docs/rules/index.md).
LINES = ("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6", "no Lightning")


ALIAS_NOTE = " (an alias, no finding of its own)"


def render_release_table(rules: Iterable[Rule]) -> str:
    """The docs' table: one row per rule, a mark for each release line it fires on (an
    alias: where the findings it names fire)."""
    head = "| rule | " + " | ".join(LINES) + " |\n|---|" + "---|" * len(LINES) + "\n"
    rows = "".join(
        f"| `{rule.code}` {rule.name}{ALIAS_NOTE if rule.reaches else ''} | "
        + " | ".join("yes" if line in rule.lines else "-" for line in LINES)
        + " |\n"
        for rule in rules
    )
    return head + rows


def safety(strategy: Strategy, where: str) -> str:
    """A rule's words on where a fix applies, followed by its safety and what it changes."""
    label = "Safe" if is_safe(strategy) else "Unsafe (runs only when asked for by name)"
    return f"{where} {label}: {SAFETY[strategy]}."


def help_uri(code: str) -> str:
    """The rule's page of the docs (docs/rules/CODE.md, written by scripts/rule_pages.py)."""
    return f"{HOMEPAGE}/blob/main/docs/rules/{code}.md"


def render_rule(rule: Rule, heading_level: int = 1) -> str:
    """The rule page as markdown that also reads as plain text; `heading_level` lets a page
    embed it under its own headings. The title is the bare code, so the anchor is `#acf001`."""
    title = "#" * heading_level
    section = "#" * (heading_level + 1)
    safety = (
        "\n".join(
            f"- `{strategy.value}`: {rule.fix_safety[strategy.value]}"
            for strategy in FIX_ORDER
            if strategy.value in rule.fix_safety  # a rule lists the fixes that may fix it
        )
        or "- No automatic fix: a person decides."
    )
    return (
        f"{title} {rule.code}\n\n"
        f"`{rule.name}`: {rule.short}\n\n"
        f"{section} What it detects\n\n{rule.full}\n\n"
        f"{section} {rule.why_title}\n\n{rule.why}\n\n"
        f"{section} Example\n\n"
        f"Before:\n\n```python\n{rule.example_before}```\n\n"
        f"After (`amp-clipfix apply`, strategy `auto`):\n\n```python\n{rule.example_after}```\n\n"
        f"{section} Fix safety\n\n{safety}\n\n"
        f"Every fix says in the diff and in machine output what it changes in behaviour. "
        f"Suppress a finding with `# amp-clipfix: ignore[{rule.code}]` on a line of any of its "
        f"sites.\n"
    )
