"""Machine output of findings: JSON (our own schema), SARIF 2.1.0 and GitHub workflow commands.

Positions are 1-based lines and columns everywhere (`Span` columns are 0-based, so +1); end
columns point just past the range, as in SARIF. Output is deterministic: findings are sorted by
path, line, column and code, and keys come in a fixed order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from amp_clipfix import __version__
from amp_clipfix.models import Certainty, Edit, Finding, Site, Span
from amp_clipfix.output.report import sorted_findings
from amp_clipfix.paths import display_path
from amp_clipfix.rules import HOMEPAGE, RULES, help_uri, render_rule

# Optional[...] rather than `| None`: this alias is evaluated at import time on Python 3.9.
EditMap = Optional[Mapping[Finding, Sequence[Edit]]]

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"


@dataclass(frozen=True)
class Summary:
    """The run's totals for machine output. `findings_by_code` and `fixable` count findings that
    are not suppressed; suppressed ones are counted apart, as they are never fixed."""

    files_seen: int
    lightning_version: str
    strategy: str
    findings_by_code: Mapping[str, int] = field(default_factory=dict)
    fixable: int = 0
    suppressed: int = 0
    errors: int = 0

    @classmethod
    def from_findings(
        cls,
        findings: Sequence[Finding],
        files_seen: int,
        lightning_version: str,
        strategy: str,
        errors: int = 0,
    ) -> Summary:
        """Count the findings so that callers only pass what findings cannot tell."""
        active = [finding for finding in findings if not finding.suppressed]
        return cls(
            files_seen=files_seen,
            lightning_version=lightning_version,
            strategy=strategy,
            findings_by_code=dict(sorted(Counter(f.code for f in active).items())),
            fixable=sum(1 for finding in active if finding.fix is not None),
            suppressed=len(findings) - len(active),
            errors=errors,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files_seen,
            "findings": sum(self.findings_by_code.values()),
            "by_code": dict(sorted(self.findings_by_code.items())),
            "fixable": self.fixable,
            "suppressed": self.suppressed,
            "errors": self.errors,
            "lightning_version": self.lightning_version,
            "strategy": self.strategy,
        }


def _range(span: Span) -> dict[str, int]:
    return {
        "line": span.line,
        "column": span.column + 1,
        "end_line": span.end_line,
        "end_column": span.end_column + 1,
    }


def _edits_for(finding: Finding, edits: EditMap) -> list[Edit]:
    if edits is None or finding.fix is None:
        return []
    found = edits.get(finding, ())
    return sorted(found, key=lambda e: (display_path(e.path), e.span.line, e.span.column))


def _site_json(site: Site) -> dict[str, Any]:
    return {
        "role": site.kind.role,
        "kind": site.kind.value,
        "path": display_path(site.path),
        **_range(site.shown_span),
        **({"cell": site.cell} if site.cell is not None else {}),
        "detail": site.detail,
        "value": site.value,
        "decided_at_run_time": site.certainty is Certainty.RUNTIME,
    }


def _finding_json(finding: Finding, edits: EditMap) -> dict[str, Any]:
    primary = finding.primary
    fix = None
    if finding.fix is not None:
        fix = {
            "strategy": finding.fix.strategy.value,
            "safety": finding.fix.safety,
            "complete": not finding.fix.leftover,
            "left_for_review": [_site_json(site) for site in finding.fix.leftover],
            "edits": [
                {"path": display_path(e.path), **_range(e.span), "replacement": e.replacement}
                for e in _edits_for(finding, edits)
            ],
        }
    return {
        "path": display_path(primary.path),
        **_range(primary.shown_span),
        **({"cell": primary.cell} if primary.cell is not None else {}),
        "code": finding.code,
        "lightning_path": finding.lightning_path.value,
        "message": finding.message,
        "confidence": finding.confidence,
        "sites": [_site_json(site) for site in finding.sites],
        "fix": fix,
        "refusal": finding.refusal,
        "review": finding.review,
        "suppressed": finding.suppressed,
    }


def to_json(findings: Sequence[Finding], summary: Summary, edits: EditMap = None) -> str:
    """One JSON document: `{"version", "findings", "summary"}`; edits are `[]` unless given."""
    document = {
        "version": __version__,
        "findings": [_finding_json(f, edits) for f in sorted_findings(findings)],
        "summary": summary.as_dict(),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _uri(path: Path) -> str:
    """The display path as a relative URI reference (forward slashes, percent-encoded)."""
    return quote(display_path(path))


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column + 1,
        "endLine": span.end_line,
        "endColumn": span.end_column + 1,
    }


def _artifact(path: Path) -> dict[str, str]:
    return {"uri": _uri(path), "uriBaseId": SRCROOT}


def _location(site: Site) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": _artifact(site.path),
            "region": _region(site.shown_span),
        }
    }


def _sarif_level(finding: Finding) -> str:
    if finding.suppressed:
        return "note"
    return RULES[finding.code].level


def _sarif_fixes(finding: Finding, edits: EditMap) -> list[dict[str, Any]]:
    found = _edits_for(finding, edits)
    if finding.fix is None or not found:
        return []
    by_path: dict[str, list[Edit]] = {}
    for edit in found:
        by_path.setdefault(_uri(edit.path), []).append(edit)
    changes = [
        {
            "artifactLocation": {"uri": uri, "uriBaseId": SRCROOT},
            "replacements": [
                {"deletedRegion": _region(e.span), "insertedContent": {"text": e.replacement}}
                for e in path_edits
            ],
        }
        for uri, path_edits in by_path.items()
    ]
    description = f"{finding.fix.strategy.value}: {finding.fix.safety}"
    return [{"description": {"text": description}, "artifactChanges": changes}]


def _sarif_result(finding: Finding, rule_index: dict[str, int], edits: EditMap) -> dict[str, Any]:
    primary = finding.primary
    text = finding.message
    if finding.review:
        text += f". Review: {finding.review}"
    elif finding.fix is None and finding.refusal:
        text += f". No fix: {finding.refusal}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": _sarif_level(finding),
        "message": {"text": text},
        "locations": [_location(primary)],
    }
    related = [
        {
            "id": number,
            **_location(site),
            "message": {"text": f"{site.kind.role}: {site.detail}"},
        }
        for number, site in enumerate((s for s in finding.sites if s != primary), start=1)
    ]
    if related:
        result["relatedLocations"] = related
    if finding.suppressed:
        result["suppressions"] = [{"kind": "inSource"}]
    fixes = _sarif_fixes(finding, edits)
    if fixes:
        result["fixes"] = fixes
    return result


def _sarif_rule(code: str) -> dict[str, Any]:
    rule = RULES[code]
    page = render_rule(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.short},
        "fullDescription": {"text": rule.full},
        "help": {"text": page, "markdown": page},
        "helpUri": help_uri(rule.code),
        "defaultConfiguration": {"level": rule.level},
    }


def to_sarif(findings: Sequence[Finding], summary: Summary, edits: EditMap = None) -> str:
    """A SARIF 2.1.0 log with one run; paths are relative to `%SRCROOT%`, the current folder."""
    codes = sorted(RULES)
    rule_index = {code: index for index, code in enumerate(codes)}
    run = {
        "tool": {
            "driver": {
                "name": "amp-clipfix",
                "version": __version__,
                "informationUri": HOMEPAGE,
                "rules": [_sarif_rule(code) for code in codes],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": summary.errors == 0}],
        "results": [_sarif_result(f, rule_index, edits) for f in sorted_findings(findings)],
        "properties": summary.as_dict(),
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: Sequence[Finding]) -> str:
    """GitHub workflow commands, one annotation line per finding that is not suppressed, at its
    rule's level: `error` for certain findings, `warning` for those to review."""
    lines = []
    for finding in sorted_findings(findings):
        if finding.suppressed:
            continue
        command = RULES[finding.code].level
        site = finding.primary
        properties = ",".join(
            f"{name}={_escape_property(str(value))}"
            for name, value in (
                ("file", display_path(site.path)),
                ("line", site.shown_span.line),
                ("col", site.shown_span.column + 1),
                ("endLine", site.shown_span.end_line),
                ("endColumn", site.shown_span.end_column + 1),
                ("title", finding.code),
            )
        )
        lines.append(f"::{command} {properties}::{_escape_data(finding.message)}\n")
    return "".join(lines)
