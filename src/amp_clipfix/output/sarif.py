"""SARIF 2.1.0 output: results with their locations, fixes and fingerprints, the rules they come
from, and one notification per file that could not be read or fixed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from amp_clipfix import __version__
from amp_clipfix.output.locations import file_span
from amp_clipfix.output.machine import (
    FINGERPRINT_KEY,
    EditMap,
    Summary,
    _edits_for,
    _full_message,
    applicability,
    fingerprints,
)
from amp_clipfix.output.report import error_line, sorted_findings
from amp_clipfix.output.safe_text import json_safe
from amp_clipfix.paths import display_path

if TYPE_CHECKING:  # models.py (dataclasses, inspect) only once a finding is shown
    from amp_clipfix.models import Edit, FileError, Finding, Site, Span

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


SRCROOT = "%SRCROOT%"


def _uri(path: Path) -> str:
    """The display path as a relative URI reference (forward slashes, percent-encoded)."""
    return quote(display_path(path).encode("utf-8", "surrogateescape"))


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
    """A SARIF location in file coordinates; a notebook site names its cell in `properties`."""
    in_file = file_span(site)
    if site.cell is None or in_file is None:
        region = _region(site.span if site.cell is None else site.shown_span)
        location: dict[str, Any] = {
            "physicalLocation": {"artifactLocation": _artifact(site.path), "region": region}
        }
    else:
        location = {
            "physicalLocation": {
                "artifactLocation": _artifact(site.path),
                "region": {"startLine": in_file.line, "endLine": in_file.end_line},
            }
        }
    if site.cell is not None:
        location["properties"] = {"cell": site.cell, "cellRegion": _region(site.shown_span)}
    return location


def _sarif_level(finding: Finding) -> str:
    from amp_clipfix.rules import level_of

    if finding.suppressed:
        return "note"
    return level_of(finding)


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
    label = applicability(finding.fix)
    description = f"{finding.fix.strategy.value} ({label}): {finding.fix.safety}"
    return [
        {
            "description": {"text": description},
            "artifactChanges": changes,
            "properties": {"applicability": label},
        }
    ]


def _sarif_result(
    finding: Finding,
    rule_index: dict[str, int],
    edits: EditMap,
    fingerprint: str,
    summary: Summary,
) -> dict[str, Any]:
    primary = finding.primary
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": _sarif_level(finding),
        "message": {"text": _full_message(finding)},
        "locations": [_location(primary)],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
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
    # As in JSON: "review" when a piece is decided at run time.
    from amp_clipfix.models import Confidence

    result["properties"] = {"confidence": Confidence(finding.confidence).value}
    assumed = summary.assumed_for(primary.path)
    if assumed is not None:
        result["properties"]["assumed_lightning"] = assumed
    return result


def _sarif_rule(code: str) -> dict[str, Any]:
    from amp_clipfix.rules import RULES, help_uri, render_rule

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


def _notification(error: FileError) -> dict[str, Any]:
    """One toolExecutionNotification per failed file, naming it."""
    notification: dict[str, Any] = {
        "level": "error",
        "message": {"text": error_line(error)},
        "properties": {"kind": error.kind.value},
    }
    if error.path is not None:
        physical: dict[str, Any] = {"artifactLocation": _artifact(error.path)}
        if error.line is not None and error.cell is None:
            physical["region"] = {"startLine": error.line}
        notification["locations"] = [{"physicalLocation": physical}]
    return notification


def to_sarif(
    findings: Sequence[Finding],
    summary: Summary,
    edits: EditMap = None,
    errors: Sequence[FileError] = (),
) -> str:
    """A SARIF 2.1.0 log with one run; paths are relative to `%SRCROOT%`, the current folder."""
    from amp_clipfix.rules import HOMEPAGE, RULES

    codes = sorted(RULES)
    prints = fingerprints(findings)
    invocation: dict[str, Any] = {"executionSuccessful": not errors and summary.errors == 0}
    if errors:
        invocation["toolExecutionNotifications"] = [_notification(error) for error in errors]
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
        "invocations": [invocation],
        "results": [
            _sarif_result(f, rule_index, edits, prints[f], summary)
            for f in sorted_findings(findings)
        ],
        "properties": summary.as_dict(),
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json_safe(json.dumps(log, indent=2, ensure_ascii=False)) + "\n"
