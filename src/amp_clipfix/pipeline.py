"""The pipeline from paths to findings and fixed file contents, walked once in one direction:

discover -> read + parse + collect (per file) -> link (per project) -> choose fixes
-> transform + verify (per file) -> changes. Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from amp_clipfix.analysis.collection import Collection, Progress, read_as_config
from amp_clipfix.analysis.parse_pool import collect_outcome, parse_and_collect
from amp_clipfix.analysis.project_collect import collect_project
from amp_clipfix.analysis.project_resolve import project_facts, resolve_collection
from amp_clipfix.fixes.changes import FileChange, fix_project
from amp_clipfix.models import Edit, FileError, Finding, Span, Strategy
from amp_clipfix.project.discover import Excludes, Project, discover, find_project_root
from amp_clipfix.project.pins import resolve_target, resolve_torch
from amp_clipfix.project.torch_release import TorchTarget
from amp_clipfix.project.version import Target
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import SourceError


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Options:
    """What the user asked for, the same for every project of a run."""

    strategy: Strategy
    target: Target | None = None  # --lightning-version / configuration; None: the project's pins
    torch: TorchTarget | None = None  # --torch-version; None: the project's pins
    fix: bool = False
    with_edits: bool = False  # per-finding edits, for JSON and SARIF output
    jobs: int = 1
    prefilter: bool = True
    helper_module: str | None = None  # `helper-module`: import the fixes' helpers from there
    # Report (and fix) only findings these keep, e.g. selected codes with a site in given files.
    keep: Callable[[Finding], bool] | None = None
    # Each project's own settings (its `[tool.amp-clipfix]`): its files and options, or an
    # error line when its configuration is broken.
    configure: Callable[[Project, Options], tuple[Project, Options] | FileError] | None = None
    cache: bool = True  # per-file results cached on disk by content hash


def run(
    paths: Sequence[Path],
    options: Options,
    exclude: Excludes = (),
    progress: Progress | None = None,
    force_exclude: bool = False,
    implied: frozenset[Path] = frozenset(),
) -> RunResult:
    discovery = discover(paths, exclude, force_exclude, implied)
    if progress is not None:
        progress.planned(sum(len(project.files) for project in discovery.projects))
    results = []
    summaries = []
    errors = list(discovery.errors)
    for project in discovery.projects:
        configured = options.configure(project, options) if options.configure else None
        if isinstance(configured, FileError):  # its configuration is broken: skip it, go on
            errors.append(configured)
            if progress is not None:
                progress.done(len(project.files))
            continue
        project, project_options = configured or (project, options)
        target, warnings = project_target(project.root, project_options)
        collection = collect_project(
            project, options.jobs, options.prefilter, progress, cache=options.cache
        )
        result = process(
            collection,
            project_options,
            target,
            len(project.files),
            project.linked_inside,
            project.root,
        )
        results.append(replace(result, notes=warnings, targets=((project.root, target),)))
        summaries.append(project_result(project.root, target, result, project_options.strategy))
    merged = merge(results, errors, projects=len(discovery.projects))
    return replace(
        merged,
        notes=discovery.notes + merged.notes,
        per_project=tuple(summaries),
    )


def project_target(root: Path, options: Options) -> tuple[Target, tuple[str, ...]]:
    """The Lightning release(s) a project runs on, and the torch it runs with: the command line
    or configuration, else its own pins (project/pins.py), and the warnings about pin files
    that could not be read."""
    resolution = resolve_target(root, options.target)
    torch = resolve_torch(root, options.torch)
    target = replace(resolution.target, torch=torch.target)
    return target, resolution.warnings + torch.warnings


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


def run_source(path: Path, data: bytes, options: Options) -> RunResult:
    """One file's contents given directly (stdin); linking stays within it, the pins are those
    of the project the given name lies in."""
    root = find_project_root(path)
    target, warnings = project_target(root, options)
    collection = Collection(root=path.parent)
    collect_outcome(collection, path, parse_and_collect(path, data))
    if not read_as_config(path):
        try:
            searchable = {path: adapter_for(path).searchable(path, data)}
        except SourceError:
            searchable = {}
        collection.contents, collection.searchable = {path: data}, searchable
        if searchable:
            resolve_collection(path.parent, {path: data}, searchable, collection)
    result = process(collection, options, target, files_seen=1)
    return replace(result, notes=warnings, targets=((root, target),))


def process(
    collection: Collection,
    options: Options,
    target: Target,
    files_seen: int,
    linked_inside: frozenset[Path] = frozenset(),
    root: Path | None = None,
) -> RunResult:
    """Link, choose fixes and (when asked) fix the files of one project."""
    files = [file.sites for file in collection.parsed.values()]
    facts = project_facts(collection, target)
    if not files and facts is None:  # nothing read has a site and no rule searches: no finding
        read_errors = tuple(collection.errors)
        return RunResult((), (), read_errors, files_seen, collection.files_parsed, projects=1)
    from amp_clipfix.fixes.choose import choose_fixes
    from amp_clipfix.rules import find_findings

    linked = find_findings(files, target, facts=facts)
    if options.keep is not None:
        linked = [finding for finding in linked if options.keep(finding)]
    findings = choose_fixes(linked, options.strategy, target)
    changes: list[FileChange] = []
    errors = list(collection.errors)
    edits: dict[Finding, tuple[Edit, ...]] = {}
    if options.fix or options.with_edits:
        helpers = options.helper_module if root is not None else None
        changes, fix_errors = fix_project(
            {**collection.searched, **collection.parsed},
            findings,
            linked_inside,
            target,
            (helpers, root),
        )
        errors.extend(fix_errors)
    if options.with_edits:
        edits = {f: () for f in findings if f.fix is not None}
        for change in changes:
            for finding, found in change_edits(change).items():
                edits[finding] += tuple(found)
    if not options.fix:
        changes = []
    return RunResult(
        findings=tuple(findings),
        changes=tuple(changes),
        errors=tuple(errors),
        files_seen=files_seen,
        files_parsed=collection.files_parsed,
        projects=1,
        edits=edits,
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


def change_edits(change: FileChange) -> dict[Finding, list[Edit]]:
    """The change's hunks as edits (whole-line ranges and their new text), each given to the
    findings whose fix targets a line in it; a hunk no target line is in (an inserted helper)
    belongs to every finding fixed in the file."""
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
