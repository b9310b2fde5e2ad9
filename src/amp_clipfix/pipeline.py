"""The pipeline from paths to findings and fixed file contents, walked once in one direction:

discover -> read + parse + collect (per file) -> link (per project) -> choose fixes
-> transform + verify (per file) -> changes. Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from amp_clipfix.collect import collect_sites
from amp_clipfix.discover import Project, discover
from amp_clipfix.fixes import choose_fixes
from amp_clipfix.link import link_project
from amp_clipfix.models import FileSites, Finding, Site, Strategy
from amp_clipfix.source import SourceError, SourceFile, encode_text, read_source
from amp_clipfix.transform import VerifyError, transform_module, verify
from amp_clipfix.version import Version


@dataclass(frozen=True)
class ParsedFile:
    """A file that has sites: kept parsed so that it is parsed once per run."""

    source: SourceFile
    module: cst.Module
    sites: FileSites


@dataclass(frozen=True)
class FileChange:
    """New bytes for one file, and the findings whose fixes produced them."""

    source: SourceFile
    new_data: bytes
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class RunResult:
    findings: tuple[Finding, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[str, ...]
    files_seen: int
    projects: int


def run(
    paths: Sequence[Path],
    strategy: Strategy,
    version: Version,
    exclude: Sequence[str] = (),
    fix: bool = False,
) -> RunResult:
    discovery = discover(paths, exclude)
    errors = list(discovery.errors)
    findings: list[Finding] = []
    changes: list[FileChange] = []
    files_seen = 0
    for project in discovery.projects:
        files_seen += len(project.files)
        parsed, project_errors = parse_project(project)
        errors.extend(project_errors)
        project_findings = choose_fixes(
            link_project([file.sites for file in parsed.values()], version), strategy, version
        )
        findings.extend(project_findings)
        if fix:
            project_changes, fix_errors = fix_project(parsed, project_findings)
            changes.extend(project_changes)
            errors.extend(fix_errors)
    return RunResult(
        findings=tuple(findings),
        changes=tuple(sorted(changes, key=lambda change: str(change.source.path))),
        errors=tuple(errors),
        files_seen=files_seen,
        projects=len(discovery.projects),
    )


def parse_project(project: Project) -> tuple[dict[Path, ParsedFile], list[str]]:
    parsed: dict[Path, ParsedFile] = {}
    errors: list[str] = []
    for path in project.files:
        try:
            source = read_source(path)
            module = cst.parse_module(source.text)
        except SourceError as error:
            errors.append(f"{path}: {error}")
            continue
        except cst.ParserSyntaxError as error:
            errors.append(
                f"{path}:{error.raw_line}:{error.raw_column}: cannot parse: {error.message}"
            )
            continue
        except RecursionError:
            errors.append(f"{path}: cannot parse: the code is nested too deeply")
            continue
        try:
            sites = collect_sites(path, module)
        except Exception as error:  # noqa: BLE001 - one odd file must not stop the run
            errors.append(f"{path}: internal error while reading sites: {error!r}")
            continue
        if sites.sites or sites.classes:
            parsed[path] = ParsedFile(source, module, sites)
    return parsed, errors


def fix_project(
    parsed: dict[Path, ParsedFile], findings: Sequence[Finding]
) -> tuple[list[FileChange], list[str]]:
    targets: dict[Path, dict[Strategy, list[Site]]] = defaultdict(lambda: defaultdict(list))
    by_file: dict[Path, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.fix is None:
            continue
        for site in finding.fix.targets:
            targets[site.path][finding.fix.strategy].append(site)
            if finding not in by_file[site.path]:
                by_file[site.path].append(finding)
    changes, errors = [], []
    for path in sorted(targets):
        file = parsed[path]
        try:
            module = transform_module(path, file.module, file.sites.sites, targets[path])
            verify(file.source.text, module.code)
            new_data = encode_text(file.source, module.code)
        except (VerifyError, SourceError) as error:
            errors.append(f"{path}: not fixed: {error}")
            continue
        except Exception as error:  # noqa: BLE001 - a codemod bug must not stop the run
            errors.append(f"{path}: not fixed: internal error: {error!r}")
            continue
        if new_data != file.source.data:
            changes.append(FileChange(file.source, new_data, tuple(by_file[path])))
    return changes, errors
