"""Text output of findings, for people: one line per finding, the sites and fix under it."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.kinds import FileError, active_findings
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.paths import display_path
from amp_clipfix.project.version import Target

if TYPE_CHECKING:
    from amp_clipfix.models import Finding, Site


class ProjectSummaryLike(Protocol):
    """What the table reads of a project's result (results.ProjectResult)."""

    @property
    def root(self) -> Path: ...

    @property
    def release(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def torch(self) -> str: ...

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    @property
    def errors(self) -> Sequence[object]: ...


def site_prefix(site: Site) -> str:
    """`path` or, in a notebook, `path:cell N`."""
    path = display_path(site.path)
    return path if site.cell is None else f"{path}:cell {site.cell}"


def site_location(site: Site) -> str:
    return f"{site_prefix(site)}:{site.shown_span.line}"


def finding_line(finding: Finding) -> str:
    site = finding.primary
    span = site.shown_span
    return f"{site_prefix(site)}:{span.line}:{span.column + 1}: {finding.code} {finding.message}"


def finding_details(finding: Finding) -> list[str]:
    """The lines under a finding: its sites, then the fix, the refusal or what to review."""
    lines = [
        f"  {site.kind.role}: {site_location(site)} {site.detail}"
        + (" (decided at run time)" if site.certainty.value == "runtime" else "")
        for site in finding.sites
    ]
    if finding.review:
        lines.append(f"  review: {finding.review}")
    lines.extend(f"  note: {note}" for note in finding.notes)
    if finding.fix is not None:
        label = "safe" if finding.fix.safe else "unsafe"
        lines.append(f"  fix ({finding.fix.strategy.value}): {label}: {finding.fix.safety}")
        lines.extend(
            f"  left for a person: {site_location(site)} {site.detail} cannot be rewritten"
            for site in finding.fix.leftover
        )
    elif finding.refusal:
        lines.append(f"  no fix: {finding.refusal}")
    return lines


def sorted_findings(findings: Sequence[Finding]) -> list[Finding]:
    def key(finding: Finding) -> tuple[str, int, int, str]:
        site = finding.primary
        return (display_path(site.path), site.span.line, site.span.column, finding.code)

    return sorted(findings, key=key)


def format_findings(findings: Sequence[Finding], verbose_details: bool = True) -> list[str]:
    """One line per finding (and its details), safe to print: names and code come from files."""
    lines = []
    for finding in sorted_findings(findings):
        lines.append(finding_line(finding))
        if verbose_details:
            lines.extend(finding_details(finding))
    return [terminal_safe(line) for line in lines]


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def error_line(error: FileError) -> str:
    """`path[:cell N][:line:column]: message`, as compilers and ruff print them."""
    where = error_where(error)
    return f"{where}: {error.message}" if where else error.message


def error_where(error: FileError) -> str:
    """`path[:cell N][:line:column]`, or "" for an error without a path."""
    where = [] if error.path is None else [display_path(error.path)]
    if error.cell is not None:
        where.append(f"cell {error.cell}")
    if error.line is not None:
        where.append(f"{error.line}:{error.column or 1}")
    return ":".join(where)


def is_error_line(line: str) -> bool:
    """A line `problem_line` wrote for an error (with or without a path)."""
    return line.startswith("error: ") or ": error: " in line


def problem_line(level: str, message: str, where: str = "") -> str:
    """The one style of every problem the run reports on stderr: `where: error: message`, as
    compilers print them (`error: message` when no path is concerned)."""
    return f"{where}: {level}: {message}" if where else f"{level}: {message}"


def project_rows(
    projects: Sequence[ProjectSummaryLike], fixed: Collection[Finding], wrote: bool
) -> list[tuple[str, ...]]:
    """The rows of `apply`'s per-project table: project, Lightning release assumed, where it
    was read (the file that decided, `--lightning-version`, `default`...), torch assumed,
    findings, findings per rule, fixed (or pending in a dry run), left for review, errors."""
    rows: list[tuple[str, ...]] = []
    for project in projects:
        findings = active_findings(project.findings)
        done = sum(1 for finding in findings if finding in fixed)
        fixable = sum(1 for finding in findings if finding.resolved)
        review = sum(1 for finding in findings if not finding.resolved)
        fixed_cell = str(done) if wrote or not fixable else f"{done} ({fixable} pending)"
        rows.append(
            (
                display_path(project.root),
                project.release,
                terminal_safe(project.source.removeprefix(f"{display_path(project.root)}/")),
                project.torch,
                str(len(findings)),
                by_rule(findings),
                fixed_cell,
                str(review),
                str(len(project.errors)),
            )
        )
    return rows


def by_rule(findings: Sequence[Finding]) -> str:
    """`ACF002 1, ACF012 3`: how many findings each rule had (`-` for none)."""
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    return ", ".join(f"{code} {count}" for code, count in sorted(counts.items())) or "-"


def assumption_lines(targets: Sequence[tuple[Path, Target]]) -> list[str]:
    """One line per project: `project ROOT: assumed pytorch-lightning 1.9.5 from ROOT/setup.py`."""
    return [
        terminal_safe(f"project {display_path(root)}: assumed {target.describe()}")
        for root, target in sorted(targets, key=lambda pair: str(pair[0]))
    ]
