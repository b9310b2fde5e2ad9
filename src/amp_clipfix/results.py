"""What a run gives: its findings, the changes their fixes make (fixes/changes.py makes each
FileChange), the errors, and each project's share. The command line reports, shows and writes
them. Data only: importing it loads no analysis and no fixer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.kinds import FileError, Strategy
from amp_clipfix.project.version import Target
from amp_clipfix.records import field, record
from amp_clipfix.sources.text import SourceFile

if TYPE_CHECKING:
    from amp_clipfix.models import Edit, Finding


@record(frozen=True)
class FileChange:
    """New bytes for one file, and the findings whose fixes produced them."""

    source: SourceFile
    new_data: bytes
    findings: tuple[Finding, ...]
    cells: tuple[tuple[int, str, str], ...] = ()  # notebooks: (cell, old text, new text)
    keep_hard_links: bool = False  # all its hard-linked names are in the tree: rewrite in place
    created: bool = False  # a new file (the helper module): `--- /dev/null` in the patch
    # Files that must be written for this one to be (the helper module it imports from):
    # when one cannot be, this one is not written either.
    requires: tuple[Path, ...] = ()


@record(frozen=True)
class RunResult:
    findings: tuple[Finding, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[FileError, ...]
    files_seen: int
    files_parsed: int
    projects: int
    edits: Mapping[Finding, tuple[Edit, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # paths with nothing to read, pin files that cannot be read
    per_project: tuple[ProjectResult, ...] = ()  # the same run, one entry per project
    targets: tuple[tuple[Path, Target], ...] = ()  # (project root, the Lightning it assumed)


@record(frozen=True)
class ProjectResult:
    """One project's share of a run, for the per-project table and `--patch-dir`."""

    root: Path
    release: str  # the Lightning release (or range) assumed for this project: "1.9.5"
    findings: tuple[Finding, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[FileError, ...]
    strategy: Strategy = Strategy.AUTO  # the project's own: command line, else its configuration
    source: str = ""  # where the release was read: "requirements.txt", "default (...)"
    torch: str = ""  # the torch release (or range) assumed: "2.13.0"


def project_result(
    root: Path, target: Target, result: RunResult, strategy: Strategy = Strategy.AUTO
) -> ProjectResult:
    return ProjectResult(
        root,
        target.version_label,
        result.findings,
        result.changes,
        result.errors,
        strategy,
        target.source,
        torch=target.torch.version_label,
    )


def merge(results: Sequence[RunResult], errors: list[FileError], projects: int) -> RunResult:
    return RunResult(
        findings=tuple(f for result in results for f in result.findings),
        changes=tuple(
            sorted(
                (change for result in results for change in result.changes),
                key=lambda change: str(change.source.path),
            )
        ),
        errors=tuple(errors + [e for result in results for e in result.errors]),
        files_seen=sum(result.files_seen for result in results),
        files_parsed=sum(result.files_parsed for result in results),
        projects=projects,
        edits={k: v for result in results for k, v in result.edits.items()},
        notes=tuple(note for result in results for note in result.notes),
        targets=tuple(pair for result in results for pair in result.targets),
    )
