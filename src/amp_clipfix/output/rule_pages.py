"""`amp-clipfix rule`: a rule found by its code or its name, its page as text, and the object
`rule --output-format json` prints (ruff's `rule` keys: name, code, summary, message_formats,
fix, explanation; and ours: level, fix_safety, url)."""

from __future__ import annotations

from amp_clipfix.rules import RULES
from amp_clipfix.rules.base import Rule, help_uri, render_rule


def rule_named(name: str) -> Rule | None:
    """The rule whose code (any case) or name is `name`."""
    found = RULES.get(name.strip().upper())
    if found is not None:
        return found
    return next((rule for rule in RULES.values() if rule.name == name.strip().lower()), None)


def rule_text(rule: Rule) -> str:
    return render_rule(rule)


def rule_json(rule: Rule) -> dict[str, object]:
    if rule.reaches is not None:
        fix = "Fix is that of the findings it names."
    elif rule.fix_safety:
        fix = "Fix is sometimes available."
    else:
        fix = "Fix is not available."
    return {
        "name": rule.name,
        "code": rule.code,
        "summary": rule.short,
        "message_formats": [rule.message],
        "fix": fix,
        "fix_safety": dict(rule.fix_safety),
        "level": rule.level,
        "explanation": render_rule(rule),
        "url": help_uri(rule.code),
    }
