"""Suppression comments: `# amp-clipfix: ignore[ACF001]` and `# noqa: ACF001`."""

from __future__ import annotations

import re

from amp_clipfix.models import ALL_CODES

SUPPRESSION = re.compile(
    r"#\s*amp-clipfix:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?|#\s*noqa:\s*(?P<noqa>[A-Z0-9,\s]+)",
    re.IGNORECASE,
)


def suppressed_codes(comment: str) -> frozenset[str]:
    """Codes a comment silences: `# amp-clipfix: ignore` (all), `ignore[ACF001,ACF002]`,
    `# noqa: ACF001` (a bare `# noqa` is left to other tools)."""
    codes: set[str] = set()
    for match in SUPPRESSION.finditer(comment):
        listed = match.group("codes") if match.group("noqa") is None else match.group("noqa")
        if listed is None:
            codes.add(ALL_CODES)
        else:
            codes.update(code.strip().upper() for code in listed.split(",") if code.strip())
    return frozenset(code for code in codes if code == ALL_CODES or code.startswith("ACF"))
