"""The pipeline from paths to findings and fixed file contents, walked once in one direction:

discover -> read + parse + collect (per file) -> link (per project) -> choose fixes
-> transform + verify (per file) -> changes. Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.fixes.choose import choose_fixes
from amp_clipfix.models import Edit, FileSites, Finding, Site, SiteKind, Span, Strategy
from amp_clipfix.output.diff import diff_hunks
from amp_clipfix.paths import display_path
from amp_clipfix.project.discover import Project, discover
from amp_clipfix.project.version import Version
from amp_clipfix.rules import find_findings
from amp_clipfix.sources.notebook import (
    Notebook,
    cells_from_module,
    notebook_text_with,
    read_notebook,
)
from amp_clipfix.sources.prefilter import (
    defined_class_names,
    may_configure_fused_optimizer,
    may_configure_trainer,
    may_configure_trainer_in_config,
    may_have_fused_optimizer,
)
from amp_clipfix.sources.text import SourceError, SourceFile, decode_source, encode_text
from amp_clipfix.sources.yaml import collect_config_sites, fix_config, is_config

if TYPE_CHECKING:  # libcst is imported on first use: a run that parses nothing never pays for it
    import libcst as cst

# Below this much source a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 512 * 1024


@dataclass(frozen=True)
class ParsedFile:
    """What collection learned from one file; `module` is kept (parsed once per run) only when
    the file has sites, since only those files can be fixed."""

    source: SourceFile
    module: cst.Module | None
    sites: FileSites
    notebook: Notebook | None = None


@dataclass(frozen=True)
class FileChange:
    """New bytes for one file, and the findings whose fixes produced them."""

    source: SourceFile
    new_data: bytes
    findings: tuple[Finding, ...]
    cells: tuple[tuple[int, str, str], ...] = ()  # notebooks: (cell, old text, new text)
    keep_hard_links: bool = False  # all its hard-linked names are in the tree: rewrite in place


@dataclass(frozen=True)
class RunResult:
    findings: tuple[Finding, ...]
    changes: tuple[FileChange, ...]
    errors: tuple[str, ...]
    files_seen: int
    files_parsed: int
    projects: int
    edits: Mapping[Finding, tuple[Edit, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # paths with nothing to read


@dataclass(frozen=True)
class Options:
    """What the user asked for, the same for every project of a run."""

    strategy: Strategy
    version: Version
    fix: bool = False
    with_edits: bool = False  # per-finding edits, for JSON and SARIF output
    jobs: int = 1
    prefilter: bool = True


class Progress(Protocol):
    """Told how many files are to be parsed and how many are done (a progress bar listens)."""

    def planned(self, files: int) -> None: ...

    def done(self, files: int) -> None: ...


class NoProgress:
    def planned(self, files: int) -> None:
        pass

    def done(self, files: int) -> None:
        pass


def run(
    paths: Sequence[Path],
    options: Options,
    exclude: Sequence[str] = (),
    progress: Progress | None = None,
) -> RunResult:
    discovery = discover(paths, exclude)
    results = []
    for project in discovery.projects:
        collection = collect_project(project, options.jobs, options.prefilter, progress)
        results.append(process(collection, options, len(project.files), project.linked_inside))
    return replace(
        merge(results, list(discovery.errors), projects=len(discovery.projects)),
        notes=discovery.notes,
    )


def run_source(path: Path, data: bytes, options: Options) -> RunResult:
    """One file's contents given directly (stdin); linking stays within it."""
    collection = Collection()
    collect_outcome(collection, path, parse_and_collect(path, data))
    return process(collection, options, files_seen=1)


def process(
    collection: Collection,
    options: Options,
    files_seen: int,
    linked_inside: frozenset[Path] = frozenset(),
) -> RunResult:
    """Link, choose fixes and (when asked) fix the files of one project."""
    files = [file.sites for file in collection.parsed.values()]
    findings = choose_fixes(
        find_findings(files, options.version), options.strategy, options.version
    )
    changes: list[FileChange] = []
    errors = list(collection.errors)
    if options.fix:
        changes, fix_errors = fix_project(collection.parsed, findings, linked_inside)
        errors.extend(fix_errors)
    edits = (
        {f: finding_edits(collection.parsed, f) for f in findings if f.fix is not None}
        if options.with_edits
        else {}
    )
    return RunResult(
        findings=tuple(findings),
        changes=tuple(changes),
        errors=tuple(errors),
        files_seen=files_seen,
        files_parsed=collection.files_parsed,
        projects=1,
        edits=edits,
    )


def merge(results: Sequence[RunResult], errors: list[str], projects: int) -> RunResult:
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
    )


@dataclass
class Collection:
    """The parsed files of one project, filled stage by stage."""

    parsed: dict[Path, ParsedFile] = field(default_factory=dict)
    attempted: set[Path] = field(default_factory=set)
    progress: Progress = field(default_factory=NoProgress)
    errors: list[str] = field(default_factory=list)
    files_parsed: int = 0


def collect_project(
    project: Project, jobs: int, prefilter: bool = True, progress: Progress | None = None
) -> Collection:
    """Parse and collect the files of a project that can matter, in up to three stages.

    With the prefilter: first the files that may build a fused optimizer; only when a class or
    a config does, the files that may configure a Trainer; then files defining base classes
    still unknown.
    """
    collection = Collection(progress=progress or NoProgress())
    contents: dict[Path, bytes] = {}
    searchable: dict[Path, bytes] = {}  # what the prefilter reads: a notebook's code cells
    for path in project.files:
        try:
            contents[path] = path.read_bytes()
            if b"\x00" in contents[path]:  # free to check for every file, unlike parsing
                raise SourceError("binary file (contains NUL bytes)")
            searchable[path] = code_of(path, contents[path])
        except OSError as error:
            collection.errors.append(f"{display_path(path)}: cannot read: {error.strerror}")
        except SourceError as error:
            collection.errors.append(f"{display_path(path)}: {error}")
            del contents[path]
    if not prefilter:
        collect_files(contents, list(contents), jobs, collection)
        return collection
    stage = [
        path
        for path, data in searchable.items()
        if (may_configure_fused_optimizer if is_config(path) else may_have_fused_optimizer)(data)
    ]
    collect_files(contents, stage, jobs, collection)
    if not any(
        site.kind is SiteKind.FUSED_OPTIMIZER and (site.owner is not None or is_config(site.path))
        for file in collection.parsed.values()
        for site in file.sites.sites
    ):
        return collection  # no Trainer finding possible; a Fabric finding lies in one file
    stage = [
        path
        for path, data in searchable.items()
        if path not in collection.attempted
        and (may_configure_trainer_in_config if is_config(path) else may_configure_trainer)(data)
    ]
    collect_files(contents, stage, jobs, collection)
    class_names = {path: defined_class_names(data) for path, data in searchable.items()}
    while stage := files_defining_missing_bases(class_names, collection):
        collect_files(contents, stage, jobs, collection)
    return collection


def is_notebook(path: Path) -> bool:
    return path.suffix == ".ipynb"


def code_of(path: Path, data: bytes) -> bytes:
    """The Python a file holds: itself, or a notebook's code cells (SourceError when the
    notebook cannot be read)."""
    if not is_notebook(path):
        return data
    return read_notebook(decode_source(path, data)).module_text.encode("utf-8")


def files_defining_missing_bases(
    class_names: dict[Path, frozenset[str]], collection: Collection
) -> list[Path]:
    """Unparsed files that may define a base class still unknown on the way from a class that
    builds a fused optimizer up to LightningModule (the chain may pass through project classes
    in files without any site word)."""
    classes = [info for file in collection.parsed.values() for info in file.sites.classes]
    by_name: dict[str, list] = {}
    for info in classes:
        by_name.setdefault(info.name, []).append(info)
    owners = {
        (site.path, site.owner)
        for file in collection.parsed.values()
        for site in file.sites.sites
        if site.kind is SiteKind.FUSED_OPTIMIZER and site.owner is not None
    }
    frontier = [info for info in classes if (info.path, info.name) in owners]
    seen: set[tuple[Path, str]] = set()
    wanted: set[str] = set()
    while frontier:
        info = frontier.pop()
        if (info.path, info.name) in seen or info.is_lightning_module:
            continue
        seen.add((info.path, info.name))
        for base in info.base_names:
            short = base.rsplit(".", 1)[-1]
            frontier.extend(by_name.get(short, ()))
            wanted.add(short)  # every class of that name counts, as the linker matches names
    return [
        path
        for path, names in class_names.items()
        if path not in collection.attempted and names & wanted
    ]


def collect_files(
    contents: dict[Path, bytes], paths: list[Path], jobs: int, collection: Collection
) -> None:
    """Parse and collect `paths`, in a process pool when it pays; results in input order."""
    collection.attempted.update(paths)
    collection.progress.planned(len(paths))
    work = [(path, contents[path]) for path in paths]
    if jobs > 1 and len(work) > 1 and sum(len(data) for _, data in work) > PARALLEL_MIN_BYTES:
        try:
            with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
                for path, outcome in zip(paths, pool.map(parse_and_collect, *zip(*work))):
                    collect_outcome(collection, path, outcome)
        except BrokenProcessPool:
            collection.errors.append(
                "a parsing process died; the files it had were not read (run with --jobs 1 to "
                "see which file)"
            )
    else:
        for path, data in work:
            collect_outcome(collection, path, parse_and_collect(path, data))


def collect_outcome(
    collection: Collection, path: Path, outcome: tuple[ParsedFile | None, str | None]
) -> None:
    parsed, error = outcome
    collection.files_parsed += 1
    collection.progress.done(1)
    if error is not None:
        collection.errors.append(error)
    elif parsed is not None and (parsed.sites.sites or parsed.sites.classes):
        collection.parsed[path] = parsed


def parse_and_collect(path: Path, data: bytes) -> tuple[ParsedFile | None, str | None]:
    """One file: decode, parse once, collect sites. Errors come back as one line."""
    import libcst as cst

    from amp_clipfix.analysis.collect import collect_sites

    shown = display_path(path)
    notebook = None
    if is_config(path):
        try:
            source = decode_source(path, data)
            return ParsedFile(source, None, collect_config_sites(path, source.text)), None
        except SourceError as error:
            return None, f"{shown}:{error}" if str(error)[:1].isdigit() else f"{shown}: {error}"
    try:
        source = decode_source(path, data)
        notebook = read_notebook(source) if is_notebook(path) else None
        text = notebook.module_text if notebook else source.text
        too_deep = nesting_problem(text)
        if too_deep is not None:
            return None, f"{shown}: cannot parse: {too_deep}"
        module = cst.parse_module(text)
    except SourceError as error:
        return None, f"{shown}: {error}"
    except cst.ParserSyntaxError as error:
        line, column, reason = syntax_error(text, error)
        if notebook is not None:
            cell, line = notebook.locate(line)
            shown = f"{shown}:cell {cell}"
        return None, f"{shown}:{line}:{column}: cannot parse: {reason}"
    except RecursionError:
        return None, f"{shown}: cannot parse: the code is nested too deeply"
    try:
        sites = collect_sites(path, module)
    except Exception as error:  # noqa: BLE001 - one odd file must not stop the run
        return None, f"{shown}: internal error while reading sites: {error!r}"
    if notebook is not None:
        sites = replace(sites, sites=tuple(in_cells(site, notebook) for site in sites.sites))
    return ParsedFile(source, module if sites.sites else None, sites, notebook), None


def in_cells(site: Site, notebook: Notebook) -> Site:
    """Give a notebook site the cell it is in and its span within that cell."""
    cell, line = notebook.locate(site.span.line)
    shift = site.span.line - line
    span = Span(line, site.span.column, site.span.end_line - shift, site.span.end_column)
    return replace(site, cell=cell, cell_span=span)


MAX_NESTING = 1000


def nesting_problem(text: str) -> str | None:
    """libcst's native parser overflows its stack (and kills the process) on code nested deeper
    than Python itself accepts, so Python's parser looks first."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return error.msg if "nested" in error.msg else None
    except (RecursionError, MemoryError):
        return "the code is nested too deeply"
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return "the code is nested too deeply"
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def syntax_error(text: str, error: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """(line, column, reason) of a parse failure, in Python's words where it has them."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        return python_error.lineno or 1, python_error.offset or 1, python_error.msg
    except (ValueError, RecursionError):
        pass
    match = re.search(r"error at (\d+):(\d+): (.*)", error.message)
    if match is None:
        return error.raw_line, error.raw_column + 1, " ".join(error.message.split())
    line, column, reason = match.groups()
    return int(line), int(column) + 1, reason


def fix_targets_by_file(
    findings: Sequence[Finding],
) -> dict[Path, dict[Strategy, list[Site]]]:
    targets: dict[Path, dict[Strategy, list[Site]]] = defaultdict(lambda: defaultdict(list))
    for finding in findings:
        if finding.fix is not None:
            for site in finding.fix.targets:
                targets[site.path][finding.fix.strategy].append(site)
    return targets


def fixed_data(
    file: ParsedFile, targets: Mapping[Strategy, Sequence[Site]]
) -> tuple[bytes, tuple[tuple[int, str, str], ...]]:
    """The file's bytes after the fixes, and for a notebook the cells they changed; raises
    VerifyError / SourceError when they fail."""
    from amp_clipfix.fixes.transform import VerifyError, transform_module, verify

    if is_config(file.source.path):
        text = fix_config(file.source.text, [site for sites in targets.values() for site in sites])
        try:
            collect_config_sites(file.source.path, text)
        except SourceError as error:
            raise VerifyError(f"the fixed config does not parse: {error}") from None
        return encode_text(file.source, text), ()
    assert file.module is not None, "files with sites keep their module"
    module = transform_module(file.source.path, file.module, file.sites.sites, targets)
    verify(file.module.code, module.code)
    if file.notebook is None:
        return encode_text(file.source, with_lost_ending(file, module.code)), ()
    changed = cells_from_module(file.notebook, module.code)
    text = notebook_text_with(file.notebook, changed)
    try:
        json.loads(text)
    except ValueError:
        raise VerifyError("the fixed notebook is not valid JSON") from None
    old_cells = {cell.number: cell.text for cell in file.notebook.cells}
    cells = tuple((number, old_cells[number], new) for number, new in sorted(changed.items()))
    return encode_text(file.source, text), cells


def with_lost_ending(file: ParsedFile, code: str) -> str:
    """libcst drops a final bare CR (`x = 1\r`); give back any ending its round trip lost."""
    assert file.module is not None
    round_trip = file.module.code
    if round_trip == file.source.text:
        return code
    if file.source.text.startswith(round_trip):
        return code + file.source.text[len(round_trip) :]
    from amp_clipfix.fixes.transform import VerifyError

    raise VerifyError("libcst does not give this file back byte for byte; not fixed")


def fix_project(
    parsed: dict[Path, ParsedFile],
    findings: Sequence[Finding],
    linked_inside: frozenset[Path] = frozenset(),
) -> tuple[list[FileChange], list[str]]:
    from amp_clipfix.fixes.transform import VerifyError

    changes, errors = [], []
    for path, targets in sorted(fix_targets_by_file(findings).items()):
        file = parsed[path]
        try:
            new_data, cells = fixed_data(file, targets)
        except (VerifyError, SourceError) as error:
            errors.append(f"{display_path(path)}: not fixed: {error}")
            continue
        except Exception as error:  # noqa: BLE001 - a codemod bug must not stop the run
            errors.append(f"{display_path(path)}: not fixed: internal error: {error!r}")
            continue
        if new_data != file.source.data:
            fixing = tuple(
                finding
                for finding in findings
                if finding.fix is not None and any(s.path == path for s in finding.fix.targets)
            )
            keep_links = path in linked_inside
            changes.append(FileChange(file.source, new_data, fixing, cells, keep_links))
    return changes, errors


def finding_edits(parsed: dict[Path, ParsedFile], finding: Finding) -> tuple[Edit, ...]:
    """The edits of one finding's fix alone, as whole-line ranges and their new text."""
    edits: list[Edit] = []
    for path, targets in sorted(fix_targets_by_file([finding]).items()):
        file = parsed[path]
        try:
            new_data, _ = fixed_data(file, targets)
        except Exception:  # noqa: BLE001 - reported by fix_project already
            continue
        for hunk in diff_hunks(file.source.data, new_data, context=0):
            first = hunk.old_start if hunk.old_count else hunk.old_start + 1
            added = b"".join(line.text for line in hunk.lines if line.tag == "+")
            replacement = added.decode(file.source.encoding, errors="replace")
            if file.source.bom and first == 1:
                replacement = replacement.removeprefix("\ufeff")
            span = Span(first, 0, first + hunk.old_count, 0)
            edits.append(Edit(path, span, replacement))
    return tuple(edits)
