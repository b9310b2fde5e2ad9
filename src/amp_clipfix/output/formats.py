"""Machine output of findings: JSON (our own schema, shipped as `schema.json`), SARIF 2.1.0,
reviewdog's rdjson, GitLab code quality and GitHub workflow commands.

Positions are 1-based lines and columns everywhere (`Span` columns are 0-based, so +1); end
columns point just past the range, as in SARIF. Output is deterministic: findings are sorted by
path, line, column and code, and keys come in a fixed order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from amp_clipfix import __version__
from amp_clipfix.models import (
    Certainty,
    Confidence,
    Edit,
    FileError,
    Finding,
    Fix,
    Site,
    Span,
    active_findings,
)
from amp_clipfix.output.locations import file_span
from amp_clipfix.output.report import error_line, sorted_findings
from amp_clipfix.output.safe_text import json_safe, terminal_safe
from amp_clipfix.paths import display_path

EditMap = Mapping[Finding, Sequence[Edit]] | None

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"
# The JSON document's own version: bumped when a key changes meaning or goes away (new keys
# may appear without a bump). The shipped schema.json describes this version. 3: a review
# finding of ACF001 / ACF002 carries its rule's code (it was ACF003) with confidence "review".
JSON_SCHEMA_VERSION = 3
FINGERPRINT_KEY = "ampClipfix/v1"


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
    # Per project: {"root", "lightning", "lightning_version", "source", "assumed", "releases"}
    projects: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def from_findings(
        cls,
        findings: Sequence[Finding],
        files_seen: int,
        lightning_version: str,
        strategy: str,
        errors: int = 0,
        projects: Sequence[Mapping[str, Any]] = (),
    ) -> Summary:
        """Count the findings so that callers only pass what findings cannot tell."""
        active = active_findings(findings)
        return cls(
            files_seen=files_seen,
            lightning_version=lightning_version,
            strategy=strategy,
            findings_by_code=dict(sorted(Counter(f.code for f in active).items())),
            fixable=sum(1 for finding in active if finding.fix is not None),
            suppressed=len(findings) - len(active),
            errors=errors,
            projects=projects,
        )

    def assumed_for(self, path: Path) -> str | None:
        """The Lightning assumed for the project holding `path` (its deepest root)."""
        shown = Path(display_path(path))
        roots = [p for p in self.projects if shown.is_relative_to(Path(str(p["root"])))]
        if not roots:
            return None
        return str(max(roots, key=lambda p: len(Path(str(p["root"])).parts))["assumed"])

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
            "projects": [dict(project) for project in self.projects],
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


def applicability(fix: Fix) -> str:
    """ruff's word for a fix's safety: `safe` keeps behaviour, `unsafe` changes it."""
    return "safe" if fix.safe else "unsafe"


def _finding_json(finding: Finding, edits: EditMap, summary: Summary) -> dict[str, Any]:
    primary = finding.primary
    fix = None
    if finding.fix is not None:
        fix = {
            "strategy": finding.fix.strategy.value,
            "applicability": applicability(finding.fix),
            "safety": finding.fix.safety,
            "complete": not finding.fix.leftover,
            "left_for_review": [_site_json(site) for site in finding.fix.leftover],
            "edits": [
                {"path": display_path(e.path), **_range(e.span), "replacement": e.replacement}
                for e in _edits_for(finding, edits)
            ],
        }
    document = {
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
    assumed = summary.assumed_for(primary.path)
    return {**document, "assumed_lightning": assumed} if assumed else document


def error_json(error: FileError) -> dict[str, Any]:
    """An error as an object: the file (null when it names none), why (`kind`), where in the
    file when known, and the message."""
    document: dict[str, Any] = {
        "path": None if error.path is None else display_path(error.path),
        "kind": error.kind.value,
    }
    for key in ("cell", "line", "column"):
        value = getattr(error, key)
        if value is not None:
            document[key] = value
    document["message"] = error.message
    return document


def to_json(
    findings: Sequence[Finding],
    summary: Summary,
    edits: EditMap = None,
    errors: Sequence[FileError] = (),
    fixed: Collection[Finding] = (),
) -> str:
    """One JSON document (schema.json): `schema_version`, the tool, the findings (each saying
    whether `apply` wrote its fix), the errors and the summary."""
    document = {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool": {"name": "amp-clipfix", "version": __version__},
        "findings": [
            {**_finding_json(f, edits, summary), "fixed": f in fixed}
            for f in sorted_findings(findings)
        ],
        "errors": [error_json(error) for error in errors],
        "summary": summary.as_dict(),
    }
    return json_safe(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


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


def fingerprints(findings: Sequence[Finding]) -> dict[Finding, str]:
    """A stable identity per finding that survives lines moving: the code, the files and what
    each site says, plus a count among findings that say the same (like GitHub's own)."""
    import hashlib  # machine formats only: a text report never hashes

    seen: Counter[str] = Counter()
    result = {}
    for finding in sorted_findings(findings):
        parts = [finding.code, display_path(finding.primary.path)]
        parts.extend(
            f"{site.kind.value}|{display_path(site.path)}|{site.detail}|{site.value}"
            for site in finding.sites
        )
        base = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
        seen[base] += 1
        result[finding] = f"{base[:32]}:{seen[base]}"
    return result


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


def _full_message(finding: Finding) -> str:
    text = finding.message
    if finding.review:
        text += f". Review: {finding.review}"
    elif finding.fix is None and finding.refusal:
        text += f". No fix: {finding.refusal}"
    return text


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


def _escape_data(text: str) -> str:
    """A command's message, as GitHub's runner reads it back (`%`, CR, LF), with every other
    control character made visible: nothing from a file name or file text steers the log."""
    return terminal_safe(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: Sequence[Finding]) -> str:
    """GitHub workflow commands, one annotation line per finding that is not suppressed, at its
    rule's level: `error` for certain findings, `warning` for those to review.

    A file name holding a control character (an escape sequence the runner's log may strip,
    a bidirectional override) could name another file once shown: such an annotation names no
    file and says where it is, escaped, in its message instead."""
    lines = []
    for finding in sorted_findings(findings):
        if finding.suppressed:
            continue
        from amp_clipfix.rules import level_of  # only with a finding to annotate

        command = level_of(finding)
        site = finding.primary
        path = display_path(site.path)
        span = site.shown_span
        where: tuple[tuple[str, object], ...] = (
            ("file", path),
            ("line", span.line),
            ("col", span.column + 1),
            ("endLine", span.end_line),
            ("endColumn", span.end_column + 1),
        )
        message = finding.message
        if terminal_safe(path) != path:
            where = ()
            message = f"{terminal_safe(path)}:{span.line}:{span.column + 1}: {message}"
        properties = ",".join(
            f"{name}={_escape_property(str(value))}"
            for name, value in (*where, ("title", finding.code))
        )
        lines.append(f"::{command} {properties}::{_escape_data(message)}\n")
    return "".join(lines)


def to_rdjson(findings: Sequence[Finding], edits: EditMap = None) -> str:
    """reviewdog's Diagnostic Format (rdjson, a `DiagnosticResult`), findings that are not
    suppressed, one diagnostic per site (output/review.py says why): a fix that fits one block of
    lines is a `suggestion` ("commit suggestion" on a pull request), any other the full patch in
    the message."""
    from amp_clipfix.output.review import FileLines, site_diagnostics
    from amp_clipfix.rules import HOMEPAGE, help_uri, level_of

    file_lines = FileLines()
    diagnostics = []
    for finding in sorted_findings(findings):
        if finding.suppressed:
            continue
        base = {
            "severity": level_of(finding).upper(),  # ERROR or WARNING
            "code": {"value": finding.code, "url": help_uri(finding.code)},
        }
        diagnostics.extend(
            site_diagnostics(
                finding, _edits_for(finding, edits), _full_message(finding), base, file_lines
            )
        )
    document = {
        "source": {"name": "amp-clipfix", "url": HOMEPAGE},
        "severity": "ERROR" if diagnostics else "INFO",
        "diagnostics": diagnostics,
    }
    return json_safe(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


GITLAB_SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


def to_gitlab(findings: Sequence[Finding]) -> str:
    """A GitLab code quality report (a JSON array, `artifacts:reports:codequality`), one issue
    per finding that is not suppressed, with a stable fingerprint."""
    import hashlib

    from amp_clipfix.rules import level_of

    prints = fingerprints(findings)
    issues = []
    for finding in sorted_findings(findings):
        if finding.suppressed:
            continue
        primary = finding.primary
        in_file = file_span(primary) or primary.span
        issues.append(
            {
                "description": f"{finding.code} {_full_message(finding)}",
                "check_name": finding.code,
                "fingerprint": hashlib.sha256(prints[finding].encode()).hexdigest(),
                "severity": GITLAB_SEVERITY.get(level_of(finding), "major"),
                "location": {
                    "path": display_path(primary.path),
                    "lines": {"begin": in_file.line, "end": in_file.end_line},
                },
            }
        )
    return json_safe(json.dumps(issues, indent=2, ensure_ascii=False)) + "\n"
