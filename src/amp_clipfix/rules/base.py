"""What a rule is, and how its page is rendered.

A rule owns its code, name, message, level, page, the strategies that may fix it and how it finds
its findings; `amp-clipfix explain`, the SARIF rules, GitHub and text output and the README's rule
section are all rendered from the rule itself, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from amp_clipfix.analysis.link import PathPieces
from amp_clipfix.models import FileSites, LightningPath, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.strategies import SAFETY, is_safe

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
FIX_ORDER = (Strategy.UNSCALE, Strategy.UNFUSE, Strategy.BF16, Strategy.GUARD)

# A rule's search: the groups of candidate pieces in a project, one group per finding.
Finder = Callable[[Sequence[FileSites], Target], Iterable[Sequence[PathPieces]]]


@dataclass(frozen=True)
class Rule:
    """One finding code and everything said about it.

    `fix_safety` maps a strategy value (`unscale`, `unfuse`, `bf16`, `guard`) to where that fix
    applies for this rule, whether it is safe and what it changes in behaviour. `find` yields the
    rule's findings as groups of pieces; a rule without it is produced by others (ACF003, the
    review form of both paths).
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
    find: Finder | None = field(default=None, compare=False)


def safety(strategy: Strategy, where: str) -> str:
    """A rule's words on where a fix applies, followed by its safety and what it changes."""
    label = "Safe" if is_safe(strategy) else "Unsafe (runs only when asked for by name)"
    return f"{where} {label}: {SAFETY[strategy]}."


def help_uri(code: str) -> str:
    """The README section of a rule (its heading is the bare code, so the anchor is stable)."""
    return f"{HOMEPAGE}#{code.lower()}"


def render_rule(rule: Rule, heading_level: int = 1) -> str:
    """The rule page as markdown that also reads as plain text; `heading_level` lets the README
    embed pages under its own headings. The title is the bare code, so the anchor is `#acf001`."""
    title = "#" * heading_level
    section = "#" * (heading_level + 1)
    safety = "\n".join(
        f"- `{strategy.value}`: {rule.fix_safety[strategy.value]}"
        for strategy in FIX_ORDER
        if strategy.value in rule.fix_safety  # a rule lists the fixes that may fix it
    )
    return (
        f"{title} {rule.code}\n\n"
        f"`{rule.name}`: {rule.short}\n\n"
        f"{section} What it detects\n\n{rule.full}\n\n"
        f"{section} Why Lightning fails\n\n{rule.why}\n\n"
        f"{section} Example\n\n"
        f"Before:\n\n```python\n{rule.example_before}```\n\n"
        f"After (`amp-clipfix apply`, strategy `auto`):\n\n```python\n{rule.example_after}```\n\n"
        f"{section} Fix safety\n\n{safety}\n\n"
        f"Every fix says in the diff and in machine output what it changes in behaviour. "
        f"Suppress a finding with `# amp-clipfix: ignore[{rule.code}]` on a line of any of its "
        f"sites.\n"
    )
