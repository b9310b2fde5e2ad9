"""The pipeline from paths to findings and fixed file contents, walked once in one direction:

discover -> read + parse + collect (per file) -> link (per project) -> choose fixes
-> transform + verify (per file) -> changes. Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from amp_clipfix.collect import collect_sites
from amp_clipfix.discover import Project, discover
from amp_clipfix.fixes import choose_fixes
from amp_clipfix.link import link_project
from amp_clipfix.models import FileSites, Finding, Site, SiteKind, Strategy
from amp_clipfix.prefilter import may_define_class, may_have_fused_optimizer, may_have_sites
from amp_clipfix.report import display_path
from amp_clipfix.source import SourceError, SourceFile, decode_source, encode_text
from amp_clipfix.transform import VerifyError, transform_module, verify
from amp_clipfix.version import Version

# Below this much source a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 512 * 1024


@dataclass(frozen=True)
class ParsedFile:
    """What collection learned from one file; `module` is kept (parsed once per run) only when
    the file has sites, since only those files can be fixed."""

    source: SourceFile
    module: cst.Module | None
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
    files_parsed: int
    projects: int


def run(
    paths: Sequence[Path],
    strategy: Strategy,
    version: Version,
    exclude: Sequence[str] = (),
    fix: bool = False,
    jobs: int = 1,
    prefilter: bool = True,
) -> RunResult:
    discovery = discover(paths, exclude)
    errors = list(discovery.errors)
    findings: list[Finding] = []
    changes: list[FileChange] = []
    files_seen = files_parsed = 0
    for project in discovery.projects:
        files_seen += len(project.files)
        collection = collect_project(project, jobs, prefilter)
        files_parsed += collection.files_parsed
        errors.extend(collection.errors)
        project_findings = choose_fixes(
            link_project([file.sites for file in collection.parsed.values()], version),
            strategy,
            version,
        )
        findings.extend(project_findings)
        if fix:
            project_changes, fix_errors = fix_project(collection.parsed, project_findings)
            changes.extend(project_changes)
            errors.extend(fix_errors)
    return RunResult(
        findings=tuple(findings),
        changes=tuple(sorted(changes, key=lambda change: str(change.source.path))),
        errors=tuple(errors),
        files_seen=files_seen,
        files_parsed=files_parsed,
        projects=len(discovery.projects),
    )


@dataclass
class Collection:
    """The parsed files of one project, filled stage by stage."""

    parsed: dict[Path, ParsedFile] = field(default_factory=dict)
    attempted: set[Path] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    files_parsed: int = 0


def collect_project(project: Project, jobs: int, prefilter: bool = True) -> Collection:
    """Parse and collect the files of a project that can matter, in up to three stages.

    With the prefilter: first the files that may build a fused optimizer; only when one does,
    the files that may hold any other site; then files defining base classes still unknown.
    """
    collection = Collection()
    contents: dict[Path, bytes] = {}
    for path in project.files:
        try:
            contents[path] = path.read_bytes()
        except OSError as error:
            collection.errors.append(f"{display_path(path)}: cannot read: {error.strerror}")
    if not prefilter:
        collect_files(contents, list(contents), jobs, collection)
        return collection
    stage = [path for path, data in contents.items() if may_have_fused_optimizer(data)]
    collect_files(contents, stage, jobs, collection)
    if not any(
        site.kind is SiteKind.FUSED_OPTIMIZER
        for file in collection.parsed.values()
        for site in file.sites.sites
    ):
        return collection
    stage = [
        path
        for path, data in contents.items()
        if path not in collection.attempted and may_have_sites(data)
    ]
    collect_files(contents, stage, jobs, collection)
    while stage := files_defining_missing_bases(contents, collection):
        collect_files(contents, stage, jobs, collection)
    return collection


def files_defining_missing_bases(contents: dict[Path, bytes], collection: Collection) -> list[Path]:
    """Unparsed files that may define a base class of a parsed class (a LightningModule may
    derive from project classes in files without any site word)."""
    known = {info.name for file in collection.parsed.values() for info in file.sites.classes}
    wanted = {
        base.rsplit(".", 1)[-1]
        for file in collection.parsed.values()
        for info in file.sites.classes
        for base in info.base_names
    } - known
    return [
        path
        for path, data in contents.items()
        if path not in collection.attempted and any(may_define_class(data, name) for name in wanted)
    ]


def collect_files(
    contents: dict[Path, bytes], paths: list[Path], jobs: int, collection: Collection
) -> None:
    """Parse and collect `paths`, in a process pool when it pays; results in input order."""
    collection.attempted.update(paths)
    work = [(path, contents[path]) for path in paths]
    if jobs > 1 and len(work) > 1 and sum(len(data) for _, data in work) > PARALLEL_MIN_BYTES:
        with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
            outcomes = list(pool.map(parse_and_collect, *zip(*work), chunksize=4))
    else:
        outcomes = [parse_and_collect(path, data) for path, data in work]
    for path, (parsed, error) in zip(paths, outcomes):
        collection.files_parsed += 1
        if error is not None:
            collection.errors.append(error)
        elif parsed is not None and (parsed.sites.sites or parsed.sites.classes):
            collection.parsed[path] = parsed


def parse_and_collect(path: Path, data: bytes) -> tuple[ParsedFile | None, str | None]:
    """One file: decode, parse once, collect sites. Errors come back as one line."""
    shown = display_path(path)
    try:
        source = decode_source(path, data)
        module = cst.parse_module(source.text)
    except SourceError as error:
        return None, f"{shown}: {error}"
    except cst.ParserSyntaxError as error:
        return None, f"{shown}:{syntax_error(source.text, error)}"
    except RecursionError:
        return None, f"{shown}: cannot parse: the code is nested too deeply"
    try:
        sites = collect_sites(path, module)
    except Exception as error:  # noqa: BLE001 - one odd file must not stop the run
        return None, f"{shown}: internal error while reading sites: {error!r}"
    return ParsedFile(source, module if sites.sites else None, sites), None


def syntax_error(text: str, error: cst.ParserSyntaxError) -> str:
    """`line:column: cannot parse: reason` in one line, in Python's words where it has them."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        return f"{python_error.lineno}:{python_error.offset}: cannot parse: {python_error.msg}"
    except (ValueError, RecursionError):
        pass
    match = re.search(r"error at (\d+):(\d+): (.*)", error.message)
    if match is None:
        reason = " ".join(error.message.split())
        return f"{error.raw_line}:{error.raw_column + 1}: cannot parse: {reason}"
    line, column, reason = match.groups()
    return f"{line}:{int(column) + 1}: cannot parse: {reason}"


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
        assert file.module is not None, "files with sites keep their module"
        try:
            module = transform_module(path, file.module, file.sites.sites, targets[path])
            verify(file.source.text, module.code)
            new_data = encode_text(file.source, module.code)
        except (VerifyError, SourceError) as error:
            errors.append(f"{display_path(path)}: not fixed: {error}")
            continue
        except Exception as error:  # noqa: BLE001 - a codemod bug must not stop the run
            errors.append(f"{display_path(path)}: not fixed: internal error: {error!r}")
            continue
        if new_data != file.source.data:
            changes.append(FileChange(file.source, new_data, tuple(by_file[path])))
    return changes, errors
