"""Machine output of findings: JSON (our own schema, shipped as `schema.json`), SARIF 2.1.0,
reviewdog's rdjson, GitLab code quality and GitHub workflow commands.

Positions are 1-based lines and columns everywhere (`Span` columns are 0-based, so +1); end
columns point just past the range, as in SARIF. Output is deterministic: findings are sorted by
path, line, column and code, and keys come in a fixed order.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from amp_clipfix import __version__
from amp_clipfix.output.machine import (
    EditMap,
    Summary,
    _edits_for,
    _full_message,
    applicability,
    fingerprints,
)
from amp_clipfix.output.report import sorted_findings
from amp_clipfix.output.safe_text import json_safe, terminal_safe
from amp_clipfix.paths import display_path

if TYPE_CHECKING:  # models.py (dataclasses, inspect) only once a finding is shown
    from amp_clipfix.models import FileError, Finding, Site, Span

# The JSON document's own version: bumped when a key changes meaning or goes away (new keys
# may appear without a bump). The shipped schema.json describes this version. 3: a review
# finding of ACF001 / ACF002 carries its rule's code (it was ACF003) with confidence "review".
JSON_SCHEMA_VERSION = 3


def _range(span: Span) -> dict[str, int]:
    return {
        "line": span.line,
        "column": span.column + 1,
        "end_line": span.end_line,
        "end_column": span.end_column + 1,
    }


def _site_json(site: Site) -> dict[str, Any]:
    from amp_clipfix.models import Certainty

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


def to_sarif(
    findings: Sequence[Finding],
    summary: Summary,
    edits: EditMap = None,
    errors: Sequence[FileError] = (),
) -> str:
    """output/sarif.py's log, asked for here as every format is; its module is imported only
    by a run that writes one."""
    from amp_clipfix.output import sarif

    return sarif.to_sarif(findings, summary, edits, errors)


GITLAB_SEVERITY = {"error": "major", "warning": "minor", "note": "info"}


def to_gitlab(findings: Sequence[Finding]) -> str:
    """A GitLab code quality report (a JSON array, `artifacts:reports:codequality`), one issue
    per finding that is not suppressed, with a stable fingerprint."""
    shown = [finding for finding in sorted_findings(findings) if not finding.suppressed]
    if not shown:  # an empty report imports neither the rules nor hashlib
        return json_safe(json.dumps([], indent=2, ensure_ascii=False)) + "\n"
    import hashlib

    from amp_clipfix.output.locations import file_span  # a notebook cell's JSON: only if shown
    from amp_clipfix.rules import level_of

    prints = fingerprints(findings)
    issues = []
    for finding in shown:
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
