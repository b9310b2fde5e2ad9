"""What every machine-readable format shares: the run's summary, the edits of a finding's fix
(read back from the change its fix made), its fingerprint and its full message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amp_clipfix.kinds import active_findings
from amp_clipfix.output.report import sorted_findings
from amp_clipfix.paths import display_path
from amp_clipfix.records import field, record
from amp_clipfix.results import FileChange

if TYPE_CHECKING:
    from amp_clipfix.models import Edit, Finding, Fix

EditMap = Mapping["Finding", Sequence["Edit"]] | None


FINGERPRINT_KEY = "ampClipfix/v1"


@record(frozen=True)
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


def _edits_for(finding: Finding, edits: EditMap) -> list[Edit]:
    if edits is None or finding.fix is None:
        return []
    found = edits.get(finding, ())
    return sorted(found, key=lambda e: (display_path(e.path), e.span.line, e.span.column))


def applicability(fix: Fix) -> str:
    """ruff's word for a fix's safety: `safe` keeps behaviour, `unsafe` changes it."""
    return "safe" if fix.safe else "unsafe"


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


def _full_message(finding: Finding) -> str:
    text = finding.message
    if finding.review:
        text += f". Review: {finding.review}"
    elif finding.fix is None and finding.refusal:
        text += f". No fix: {finding.refusal}"
    return text


def change_edits(change: FileChange) -> dict[Finding, list[Edit]]:
    """The change's hunks as edits (whole-line ranges and their new text), each given to the
    findings whose fix targets a line in it; a hunk no target line is in (an inserted helper)
    belongs to every finding fixed in the file."""
    from amp_clipfix.models import Edit, Span
    from amp_clipfix.output.diff import diff_hunks

    source = change.source
    edits: dict[Finding, list[Edit]] = {finding: [] for finding in change.findings}
    for hunk in diff_hunks(source.data, change.new_data, context=0):
        first = hunk.old_start if hunk.old_count else hunk.old_start + 1
        added = b"".join(line.text for line in hunk.lines if line.tag == "+")
        replacement = added.decode(source.encoding, errors="replace")
        if source.bom and first == 1:
            replacement = replacement.removeprefix("\ufeff")
        edit = Edit(source.path, Span(first, 0, first + hunk.old_count, 0), replacement)
        owners = [
            finding
            for finding in change.findings
            if finding.fix is not None
            and any(
                site.path == source.path and first <= site.span.line < first + hunk.old_count
                for site in finding.fix.targets
            )
        ]
        for finding in owners or change.findings:
            edits[finding].append(edit)
    return edits
