"""Suppression comments: `# amp-clipfix: ignore[ACF001]` and `# noqa: ACF001`."""

from __future__ import annotations

import re

from amp_clipfix.models import ALL_CODES
from amp_clipfix.patterns import lazy

SUPPRESSION = lazy(
    r"#\s*amp-clipfix:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?"
    r"|#\s*(?P<is_noqa>noqa)(?::\s*(?P<noqa>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)


def suppressed_codes(comment: str) -> frozenset[str]:
    """Codes a comment silences: `# amp-clipfix: ignore` (all), `ignore[ACF001,ACF002]`,
    `# noqa: ACF001`, and a bare `# noqa` (all codes, as ruff reads it)."""
    codes: set[str] = set()
    for match in SUPPRESSION.finditer(comment):
        listed = match.group("noqa") if match.group("is_noqa") else match.group("codes")
        if listed is None:
            codes.add(ALL_CODES)
        else:
            codes.update(code.upper() for code in re.split(r"[,\s]+", listed) if code)
    return frozenset(code for code in codes if code == ALL_CODES or code.startswith("ACF"))
