"""The pipeline from paths to findings and fixed file contents, walked once in one direction:

discover -> read + parse + collect (per file) -> link (per project) -> choose fixes
-> transform + verify (per file) -> changes. Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from amp_clipfix import observed
from amp_clipfix.models import (
    Edit,
    ErrorKind,
    FileError,
    FileSites,
    Finding,
    Site,
    SiteKind,
    Span,
    Strategy,
)
from amp_clipfix.paths import is_library, os_error_reason
from amp_clipfix.project.config import ConfigError
from amp_clipfix.project.discover import Excludes, Project, discover, find_project_root
from amp_clipfix.project.pins import resolve_target, resolve_torch
from amp_clipfix.project.torch_release import TorchTarget
from amp_clipfix.project.version import DEFAULT_TARGET, Target
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import (
    Document,
    Language,
    Rendered,
    SourceError,
    Stage,
    VerifyError,
)
from amp_clipfix.sources.prefilter import (
    FUSED_WORD,
    defined_class_names,
    holds,
    may_clip,
    may_need_search,
)
from amp_clipfix.sources.text import SourceFile, decode_source, encode_text

if TYPE_CHECKING:
    from amp_clipfix.analysis.read import ReadFile
    from amp_clipfix.fixes.transform import HelperImports

# Below this much source a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 512 * 1024

# A finding needs Lightning: some file imports it (or is a config naming its classes).
USES_LIGHTNING = re.compile(
    rb"(?:^|;)\s*(?:from\s+|import\s+(?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*)"
    rb"(?:lightning|pytorch_lightning|lightning_fabric)\b|"
    rb"class_path|_target_|\btrainer\s*:",
    re.MULTILINE,
)

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import ProjectFacts
    from amp_clipfix.analysis.summary import Summary


@dataclass(frozen=True)
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


class Progress(Protocol):
    """Told how many files a run looks at, once they are found, and how many it has looked at
    (read and filtered out, or parsed): a progress bar listens."""

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


@dataclass
class Collection:
    """The parsed files of one project, filled stage by stage."""

    parsed: dict[Path, ReadFile] = field(default_factory=dict)
    attempted: set[Path] = field(default_factory=set)
    progress: Progress = field(default_factory=NoProgress)
    errors: list[FileError] = field(default_factory=list)
    files_parsed: int = 0
    files_done: int = 0  # told to the progress bar
    unparsed: dict[Path, FileSites] = field(default_factory=dict)  # a trial resolution's sites
    cache: Cache | None = None
    # Per-file summaries (ast) and the evaluator over them, made once per run and shared by
    # the trial and the final resolution.
    summaries: dict[Path, Summary | None] = field(default_factory=dict)
    evaluator: Evaluator | None = None
    # The project's files as read, for the rules with their own search (their facts), and the
    # documents those searches read that have no collected sites (a fix may change them).
    root: Path | None = None
    contents: dict[Path, bytes] = field(default_factory=dict)
    searchable: dict[Path, bytes] = field(default_factory=dict)
    searched: dict[Path, ReadFile] = field(default_factory=dict)


def collect_project(
    project: Project,
    jobs: int,
    prefilter: bool = True,
    progress: Progress | None = None,
    cache: bool = False,
) -> Collection:
    """Parse and collect the files of a project that can matter, in up to three stages.

    With the prefilter: first the files that may build a fused optimizer; only when a class or
    a config does, the files that may configure a Trainer; then files defining base classes
    still unknown.
    """
    collection = Collection(progress=progress or NoProgress(), root=project.root)
    collect_project_files(project, jobs, prefilter, collection, cache)
    # every file has been looked at now, parsed or not
    collection.progress.done(max(len(project.files) - collection.files_done, 0))
    return collection


def collect_project_files(
    project: Project, jobs: int, prefilter: bool, collection: Collection, cache: bool
) -> None:
    """collect_project's work: from the cache when the project is unchanged, else the stages."""
    if cache:
        from amp_clipfix.analysis.cache import Cache

        collection.cache = Cache(project.root)
    contents, searchable = read_project(project, collection, prefilter)
    collection.contents, collection.searchable = contents, searchable
    key = ""
    if collection.cache is not None:
        key = collection.cache.project_key("collection", contents, prefilter)
        if restore_collection(collection, contents, collection.cache.load(key)):
            return
    read_errors = len(collection.errors)
    collect_stages(project.root, contents, searchable, jobs, prefilter, collection)
    errors = collection.errors[read_errors:]
    if collection.cache is not None and all(is_lasting(error) for error in errors):
        sites = {path: parsed.sites for path, parsed in collection.parsed.items()}
        collection.cache.store(key, CollectedProject(sites, tuple(errors), collection.files_parsed))


@dataclass(frozen=True)
class CollectedProject:
    """What collecting an unchanged project gives again: each file's sites after the
    resolution, the files' errors, how many files were parsed (the cache's project entry)."""

    sites: dict[Path, FileSites]
    errors: tuple[FileError, ...]
    files_parsed: int


def restore_collection(collection: Collection, contents: dict[Path, bytes], cached: object) -> bool:
    """Fill `collection` from a cached CollectedProject: no stage, search or resolution runs
    (only the documents with sites are loaded, for the fixes and the report)."""
    if not isinstance(cached, CollectedProject):
        return False
    from amp_clipfix.analysis.read import ReadFile

    parsed = {}
    for path, sites in cached.sites.items():
        try:
            parsed[path] = ReadFile(adapter_for(path).load(path, contents[path]), sites)
        except (SourceError, KeyError):
            return False
    collection.parsed.update(parsed)
    collection.errors.extend(cached.errors)
    collection.files_parsed = cached.files_parsed
    return True


def is_lasting(error: FileError) -> bool:
    """An error the next run on the same files gives again (a parse error), unlike a parsing
    process that died (memory) or a resolution that failed: only those are cached."""
    return error.kind is ErrorKind.PARSE and error.message != WORKER_DIED


def read_project(
    project: Project, collection: Collection, prefilter: bool = True
) -> tuple[dict[Path, bytes], dict[Path, bytes]]:
    """Every file's bytes, and what the prefilter reads of it (a notebook's code cells).

    With the prefilter, a project in which no file's raw bytes can write `fused` gets no text
    to search at all: no stage can pass there (collect_stages stops after the first), so no
    notebook's JSON is parsed for its code, just as no Python file is parsed."""
    contents: dict[Path, bytes] = {}
    searchable: dict[Path, bytes] = {}
    failed: dict[Path, OSError] = {}
    for path in project.files:
        try:
            contents[path] = observed.read_bytes(path)
        except OSError as error:
            failed[path] = error
    searched = (
        not prefilter
        or any(adapter_for(path).may_mention(data, FUSED_WORD) for path, data in contents.items())
        or may_need_search(
            (data, read_as_config(path), adapter_for(path).may_mention)
            for path, data in contents.items()
        )
    )
    for path in project.files:
        if path in failed:
            message = f"cannot read: {os_error_reason(failed[path])}"
            collection.errors.append(FileError(path, message, ErrorKind.READ))
            continue
        try:
            if b"\x00" in contents[path]:  # free to check for every file, unlike parsing
                raise SourceError("binary file (contains NUL bytes)")
            if searched:
                searchable[path] = adapter_for(path).searchable(path, contents[path])
        except SourceError as error:
            collection.errors.append(FileError(path, str(error), ErrorKind.READ))
            del contents[path]
    return contents, searchable


def collect_stages(
    root: Path,
    contents: dict[Path, bytes],
    searchable: dict[Path, bytes],
    jobs: int,
    prefilter: bool,
    collection: Collection,
) -> None:
    """The stages of collect_project, then the project resolution."""
    if not prefilter:
        collect_files(contents, list(contents), jobs, collection)
        resolve_collection(root, contents, searchable, collection)
        return
    # Library code (site-packages, Lightning's own package) is never a user site: never parsed.
    searchable = {path: data for path, data in searchable.items() if not is_library(path)}
    collect_files(contents, passing(searchable, Stage.FUSED_OPTIMIZER), jobs, collection)
    if not any(FUSED_WORD in data for data in searchable.values()) or not any(
        USES_LIGHTNING.search(data) for data in searchable.values()
    ):
        return  # no optimizer of the project is fused, or nothing uses Lightning
    unread = {path: data for path, data in searchable.items() if path not in collection.attempted}
    needed = trainer_files(root, contents, searchable, collection)
    if needed is not None:  # only the Trainers a followed fit links to a fused module
        unread_trainers = {p: d for p, d in unread.items() if p in needed or read_as_config(p)}
    else:
        unread_trainers = unread
    stage = passing(unread_trainers, Stage.TRAINER)
    clips = {
        p for p, d in unread.items() if p not in stage and not read_as_config(p) and may_clip(d)
    }
    evaluator = project_evaluator_of(root, contents, searchable, collection)
    from amp_clipfix.analysis.resolve import clipping_files

    stage += sorted(clipping_files(evaluator, clips), key=list(unread).index)
    collect_files(contents, stage, jobs, collection)
    class_names = ClassNames(searchable)
    while stage := files_defining_missing_bases(class_names, collection):
        collect_files(contents, stage, jobs, collection)
    resolve_collection(root, contents, searchable, collection)


def read_as_config(path: Path) -> bool:
    """Read as a config, not as Python code (the adapter decides, not the suffix)."""
    return adapter_for(path).language is not Language.PYTHON


def trainer_files(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> set[Path] | None:
    """A first resolution over the fused optimizers alone tells which Trainer files matter."""
    from amp_clipfix.analysis.resolve import trainer_files_needed

    trial = Collection(
        parsed=dict(collection.parsed),
        cache=collection.cache,
        summaries=collection.summaries,
        evaluator=project_evaluator_of(root, contents, searchable, collection),
    )
    resolve_collection(root, contents, searchable, trial, parse=False)
    if trial.errors:
        return None
    resolved = {path: file.sites for path, file in trial.parsed.items()}
    return trainer_files_needed({**trial.unparsed, **resolved})


def summary_loader(
    root: Path, contents: dict[Path, bytes], collection: Collection
) -> Callable[[Path], Summary | None]:
    """Summaries on first use, from the reader's tree when the file was read (parsed once)."""
    from amp_clipfix.analysis.summary import summarise

    def load(path: Path) -> Summary | None:
        if path not in collection.summaries:
            read = collection.parsed.get(path)
            if read is not None and read.syntax is not None:
                summary = summarise(root, path, read.document.text, read.syntax)
                collection.summaries[path] = summary
                return summary
            try:
                text = adapter_for(path).load(path, contents[path]).text
            except (SourceError, KeyError):
                return None
            collection.summaries[path] = summarise(root, path, text)
        return collection.summaries[path]

    return load


def project_evaluator_of(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> Evaluator:
    """The project's evaluator, made once per run whether or not a resolution comes from the
    cache: the searches of the collection stages ask it too, and must get the same answers."""
    from amp_clipfix.analysis.resolve import project_evaluator

    if collection.evaluator is None:
        python = {path: data for path, data in searchable.items() if not read_as_config(path)}
        loader = summary_loader(root, contents, collection)
        collection.evaluator = project_evaluator(root, python, loader)
    return collection.evaluator


def resolve_collection(
    root: Path,
    contents: dict[Path, bytes],
    searchable: dict[Path, bytes],
    collection: Collection,
    parse: bool = True,
) -> None:
    """The project resolution (analysis/resolve.py) over the per-file sites; files that gain
    sites are read too (libcst parses only the files a fix changes, in fixed_file)."""
    from amp_clipfix.analysis.read import ReadFile, in_cell
    from amp_clipfix.analysis.resolve import resolve

    python = {path: data for path, data in searchable.items() if not read_as_config(path)}
    load = summary_loader(root, contents, collection)

    files = {path: parsed.sites for path, parsed in collection.parsed.items()}
    cache, key = collection.cache, ""
    if cache is not None:
        stage = "resolve" if parse else "resolve-trial"  # a trial searches less
        key = cache.project_key(stage, python, sorted(files.items(), key=lambda i: str(i[0])))
    cached = cache.load(key) if cache is not None else None
    if isinstance(cached, dict):
        resolved = cached
    else:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            evaluator = project_evaluator_of(root, contents, searchable, collection)
            resolved = resolve(root, files, python, load, evaluator, trial=not parse)
        except RecursionError:
            message = "the project resolution gave up (code nested too deeply)"
            collection.errors.append(FileError(None, message, ErrorKind.INTERNAL))
            return
        except Exception as failure:  # noqa: BLE001 - the files' own sites still stand
            message = f"internal error in the project resolution: {failure!r}"
            collection.errors.append(FileError(None, message, ErrorKind.INTERNAL))
            return
        finally:
            sys.setrecursionlimit(limit)
        if cache is not None:
            cache.store(key, resolved)
    for path, sites in resolved.items():
        parsed = collection.parsed.get(path)
        if parsed is not None and parsed.sites == sites:
            continue
        if not parse:
            if parsed is not None:
                collection.parsed[path] = replace(parsed, sites=sites)
            else:
                collection.unparsed[path] = sites
            continue
        fixable = any(site.fixable for site in sites.sites)
        if parsed is None and not fixable:  # fit calls, unfixable sites: no libcst needed
            try:
                document = adapter_for(path).load(path, contents[path])
            except SourceError:
                continue
            collection.parsed[path] = ReadFile(document, sites)
            continue
        if parsed is None:  # the libcst tree a fix needs is parsed by fixed_file
            fresh, error = parse_and_collect(path, contents[path])
            if fresh is None:
                if error is not None and path not in collection.attempted:
                    collection.errors.append(error)
                continue
            parsed = fresh
        if parsed.document.locate(1)[0] is not None:  # a notebook: sites name their cell
            sites = replace(
                sites,
                sites=tuple(
                    site if site.cell is not None else in_cell(site, parsed.document)
                    for site in sites.sites
                ),
            )
        collection.parsed[path] = replace(parsed, sites=sites)


def project_facts(collection: Collection, target: Target) -> ProjectFacts | None:
    """The parsed files and facts the rules with their own search read: the project's Python
    documents that hold one of their words (library code left out), each parsed once (the
    collection's tree when it has one), and the project's one evaluator."""
    if collection.root is None or not may_need_search(
        (data, read_as_config(path), holds) for path, data in collection.searchable.items()
    ):
        return None  # no file holds a word a searching rule looks for: none is imported
    from amp_clipfix.rules import searching_rules

    rules = [
        rule
        for rule in searching_rules()
        if any(
            word in data for data in collection.searchable.values() for word in rule.needed_words
        )
    ]
    words = tuple(word for rule in rules for word in rule.words)
    if not words:
        return None
    from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
    from amp_clipfix.analysis.read import ReadFile

    root, contents, searchable = collection.root, collection.contents, collection.searchable
    load = summary_loader(root, contents, collection)
    configs: dict[Path, Document] = {}

    def read(path: Path) -> FileFacts | None:
        if path not in searchable or is_library(path):
            return None
        parsed = collection.parsed.get(path)
        if read_as_config(path):  # a YAML config: a rule reads its sites and edits its tokens
            try:
                config = parsed.document if parsed else adapter_for(path).load(path, contents[path])
            except (SourceError, KeyError):
                return None  # the collection reports what cannot be read
            configs[path] = config
            if parsed is None:
                collection.searched[path] = ReadFile(config, FileSites(path))
            return None
        try:
            document = parsed.document if parsed else adapter_for(path).load(path, contents[path])
        except (SourceError, KeyError):
            return None  # the collection reports what cannot be read
        summary = load(path)
        if summary is None:
            if not any(error.path == path for error in collection.errors):
                collection.errors.append(parse_error(path, contents[path]))
            return None
        if parsed is None:
            collection.searched[path] = ReadFile(document, FileSites(path))
        return FileFacts(document, summary)

    files = {
        path: found
        for path, data in searchable.items()
        if any(word in data for word in words) and (found := read(path)) is not None
    }
    return ProjectFacts(
        root,
        target,
        files,
        lambda: project_evaluator_of(root, contents, searchable, collection),
        loader=read,
        configs=configs,
    )


def parse_error(path: Path, data: bytes) -> FileError:
    """The one-line error of a file a search wanted that Python cannot parse."""
    _, error = parse_and_collect(path, data)
    return error or FileError(path, "cannot parse", ErrorKind.PARSE)


def passing(searchable: Mapping[Path, bytes], stage: Stage) -> list[Path]:
    """The files whose adapter's prefilter says they may hold this stage's sites."""
    return [path for path, data in searchable.items() if adapter_for(path).prefilter(stage)(data)]


# Packages whose classes the collector names by qualified name: a base imported from one of them
# is never a class of the project, whatever project class shares its short name.
EXTERNAL_PACKAGES = frozenset({"lightning", "pytorch_lightning", "lightning_fabric", "torch"})


class ClassNames:
    """The class names each file may define, read from the text only when a base class is
    looked for at all (most runs look for none; on a torch-sized tree the scan is not free)."""

    def __init__(self, searchable: Mapping[Path, bytes]) -> None:
        self.searchable = searchable
        self.by_file: dict[Path, frozenset[str]] | None = None

    def items(self) -> Iterable[tuple[Path, frozenset[str]]]:
        if self.by_file is None:
            self.by_file = {p: defined_class_names(d) for p, d in self.searchable.items()}
        return self.by_file.items()


def files_defining_missing_bases(class_names: ClassNames, collection: Collection) -> list[Path]:
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
            if base.split(".", 1)[0] in EXTERNAL_PACKAGES:
                continue  # imported from Lightning or torch: no project file defines it
            short = base.rsplit(".", 1)[-1]
            frontier.extend(by_name.get(short, ()))
            wanted.add(short)  # every class of that name counts, as the linker matches names
    if not wanted:
        return []
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
    if collection.cache is not None:
        paths = [path for path in paths if not from_cache(collection, path, contents[path])]
    work = [(path, contents[path]) for path in paths]
    if jobs > 1 and len(work) > 1 and sum(len(data) for _, data in work) > PARALLEL_MIN_BYTES:
        for path, outcome in zip(paths, parse_in_pool(work, min(jobs, len(work)))):
            collect_outcome(collection, path, outcome)
    else:
        for path, data in work:
            collect_outcome(collection, path, parse_and_collect(path, data))


Outcome = tuple["ReadFile | None", "FileError | None"]


def parse_in_pool(work: list[tuple[Path, bytes]], workers: int) -> list[Outcome]:
    """Outcomes in input order. A worker that dies (a crash in native code, the OOM killer)
    costs only the file that killed it: the files left unfinished are parsed again one by one,
    each in a process of its own, so that only the killer is reported."""
    from concurrent.futures import ProcessPoolExecutor  # a run that needs no pool never
    from concurrent.futures.process import BrokenProcessPool  # pays for multiprocessing

    outcomes: list[Outcome | None] = [None] * len(work)
    with ProcessPoolExecutor(max_workers=workers, initializer=leave_interrupts_to_parent) as pool:
        futures = [pool.submit(parse_and_collect, path, data) for path, data in work]
        try:
            for index, future in enumerate(futures):
                with contextlib.suppress(BrokenProcessPool):
                    outcomes[index] = future.result()
        except BaseException:  # Ctrl-C: the files not started are not parsed any more
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [
        outcome if outcome is not None else parse_isolated(*work[index])
        for index, outcome in enumerate(outcomes)
    ]


WORKER_DIED = "cannot parse: the parsing process died on this file"


def leave_interrupts_to_parent() -> None:
    """A parsing process ignores Ctrl-C (the terminal sends it to the whole process group):
    the command ends the run and says so once, without a traceback from each worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def parse_isolated(path: Path, data: bytes) -> Outcome:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, initializer=leave_interrupts_to_parent) as pool:
            return pool.submit(parse_and_collect, path, data).result()
    except BrokenProcessPool:
        return None, FileError(path, WORKER_DIED, ErrorKind.PARSE)


def from_cache(collection: Collection, path: Path, data: bytes) -> bool:
    """A file whose sites the cache holds is loaded (no libcst) with those sites."""
    assert collection.cache is not None
    sites = collection.cache.get(path, data)
    if sites is None:
        return False
    from amp_clipfix.analysis.read import ReadFile

    try:
        document = adapter_for(path).load(path, data)
    except SourceError:
        return False
    collect_outcome(collection, path, (ReadFile(document, sites), None), cached=True)
    return True


def collect_outcome(
    collection: Collection,
    path: Path,
    outcome: tuple[ReadFile | None, FileError | None],
    cached: bool = False,
) -> None:
    parsed, error = outcome
    if collection.cache is not None and parsed is not None and not cached:
        collection.cache.put(path, parsed.document.source.data, parsed.sites)
    collection.files_parsed += 1
    collection.files_done += 1
    collection.progress.done(1)
    if error is not None:
        collection.errors.append(error)
    elif parsed is not None and (parsed.sites.sites or parsed.sites.classes or parsed.sites.fits):
        collection.parsed[path] = parsed


def parse_and_collect(path: Path, data: bytes) -> tuple[ReadFile | None, FileError | None]:
    """One file: load it through its adapter, parse once, read its sites. Errors come back as
    values, so that one odd file never stops the run (and survives a process pool)."""
    from amp_clipfix.analysis.read import ParseError, read_document  # only files that pass

    try:
        return read_document(adapter_for(path).load(path, data)), None
    except ParseError as error:
        where = (error.line, error.column, error.cell)
        return None, FileError(path, str(error), ErrorKind.PARSE, *where)
    except SourceError as error:
        kind = ErrorKind.PARSE if str(error).startswith("cannot parse") else ErrorKind.READ
        return None, FileError(path, str(error), kind)
    except Exception as error:  # noqa: BLE001 - one odd file must not stop the run
        message = f"internal error while reading sites: {error!r}"
        return None, FileError(path, message, ErrorKind.INTERNAL)


def fix_targets_by_file(
    findings: Sequence[Finding],
) -> dict[Path, dict[Strategy, list[Site]]]:
    """The codemods' targets per file; a rule's own fix (its edits) runs no codemod."""
    targets: dict[Path, dict[Strategy, list[Site]]] = defaultdict(lambda: defaultdict(list))
    for finding in findings:
        if finding.fix is not None and not finding.fix.edits:
            for site in finding.fix.targets:
                targets[site.path][finding.fix.strategy].append(site)
    return targets


def edits_by_file(findings: Sequence[Finding]) -> dict[Path, list[Edit]]:
    """The text edits of the rules' own fixes, per file."""
    edits: dict[Path, list[Edit]] = defaultdict(list)
    for finding in findings:
        if finding.fix is not None:
            for edit in finding.fix.edits:
                edits[edit.path].append(edit)
    return edits


def fixed_file(
    file: ReadFile,
    targets: Mapping[Strategy, Sequence[Site]],
    target: Target = DEFAULT_TARGET,
    helpers: HelperImports | None = None,
    edits: Sequence[Edit] = (),
) -> Rendered:
    """The file's bytes after the fixes; raises VerifyError / SourceError when they fail.
    The rules' own edits are made first, and the codemods' targets moved past them."""
    from amp_clipfix.fixes.transform import fixed_text  # imports libcst: only when fixing

    document = file.document
    if edits:
        from amp_clipfix.fixes.edits import apply_edits, moved_span, ordered

        if document.language not in (Language.PYTHON, Language.YAML):
            raise VerifyError("a rule's own fix edits Python code and YAML configs only; not fixed")
        made = ordered(edits)
        edited = apply_edits(document.text, made)
        if not targets:
            return document.adapter.render(document, edited)
        targets = {
            strategy: [replace(s, span=moved_span(made, s.span)) for s in sites]
            for strategy, sites in targets.items()
        }
        file = replace(file, document=replace(document, text=edited), tree=None)
    if file.tree is None and file.document.language is Language.PYTHON:  # parsed only to fix
        from amp_clipfix.fixes.elide import elide
        from amp_clipfix.sources.python import parse_libcst, verify_python

        document = file.document
        lines = [(s.span.line, s.span.end_line) for sites in targets.values() for s in sites]
        elided = elide(document.text, lines, file.syntax)
        if elided is not None:  # a large module: libcst sees what the fixes need
            part = replace(document, text=elided.text)
            fixed_part = fixed_text(
                replace(file, document=part, tree=parse_libcst(part.text)), targets, target, helpers
            )
            text = elided.restore(fixed_part)
            if text is not None:
                verify_python(part.text, fixed_part)  # the rest is the module's own statements
                return document.adapter.render(document, text, parsed=True)
        file = replace(file, tree=parse_libcst(document.text))
    text = fixed_text(file, targets, target, helpers)
    return document.adapter.render(document, text)


def fix_project(
    parsed: dict[Path, ReadFile],
    findings: Sequence[Finding],
    linked_inside: frozenset[Path] = frozenset(),
    target: Target = DEFAULT_TARGET,
    helper_module: tuple[str | None, Path | None] = (None, None),
) -> tuple[list[FileChange], list[FileError]]:
    """Each file's fixes, made once: the diff, the written bytes and machine output's edits all
    come from these changes. With `helper-module` (its name and the project root) the fixed
    files import their helpers and one more change creates or updates that module."""
    changes, errors = [], []
    helpers = helper_imports(*helper_module)
    by_file = fix_targets_by_file(findings)
    edits = edits_by_file(findings)
    for path in sorted(set(by_file) | set(edits)):
        file, targets = parsed[path], by_file.get(path, {})
        try:
            rendered = fixed_file(file, targets, target, helpers, edits.get(path, ()))
        except (VerifyError, SourceError) as error:
            errors.append(FileError(path, f"not fixed: {error}", ErrorKind.FIX))
            continue
        except Exception as error:  # noqa: BLE001 - a codemod bug must not stop the run
            message = f"not fixed: internal error: {error!r}"
            errors.append(FileError(path, message, ErrorKind.INTERNAL))
            continue
        source = file.document.source
        if rendered.data != source.data:
            fixing = tuple(
                finding
                for finding in findings
                if finding.fix is not None
                and (
                    any(s.path == path for s in finding.fix.targets)
                    or any(e.path == path for e in finding.fix.edits)
                )
            )
            keep_links = path in linked_inside
            changes.append(FileChange(source, rendered.data, fixing, rendered.cells, keep_links))
    if helpers is not None and helpers.imported:
        return with_helper_module(changes, errors, helpers)
    return changes, errors


def helper_imports(module: str | None, root: Path | None) -> HelperImports | None:
    if module is None or root is None:
        return None
    from amp_clipfix.fixes.transform import HelperImports

    return HelperImports(module, root)


def with_helper_module(
    changes: list[FileChange], errors: list[FileError], helpers: HelperImports
) -> tuple[list[FileChange], list[FileError]]:
    """The changes plus the helper module created or completed, which the files importing from
    it require (write_all writes them only after it). When it cannot be made, none of those
    files is changed: each gets an error line, after the one that says why."""
    from amp_clipfix.fixes.helper_module import helper_module_source
    from amp_clipfix.project.config import helper_module_path

    importing = [c for c in changes if c.source.path in helpers.importers]
    findings = tuple(dict.fromkeys(f for c in importing for f in c.findings))
    path = helpers.root / helpers.module.replace(".", "/")
    try:
        path = helper_module_path(helpers.root, helpers.module)
        if any(c.source.path == path for c in changes):
            raise SourceError("it is also a file being fixed")
        if observed.exists(path):
            source = read_helper_module(path, helpers.root)
            text = helper_module_source(source.text, helpers.imported)
            if text == source.text:
                return changes, errors
            helper = FileChange(source, encode_text(source, text), findings)
        else:
            empty = SourceFile(path, b"", "", "utf-8", False)
            new = helper_module_source(None, helpers.imported).encode("utf-8")
            helper = FileChange(empty, new, findings, created=True)
    except (SourceError, ValueError, ConfigError) as error:
        message = f"helper-module {helpers.module}: cannot be created or updated: {error}"
        refused = [
            FileError(c.source.path, f"not fixed: {NEEDS_HELPER} {helpers.module}", ErrorKind.FIX)
            for c in importing
        ]
        kept = [c for c in changes if c not in importing]
        return kept, [*errors, FileError(path, message, ErrorKind.FIX), *refused]
    needing = [replace(c, requires=(path,)) if c in importing else c for c in changes]
    return [*needing, helper], errors


NEEDS_HELPER = "it would import from helper-module"


def read_helper_module(path: Path, root: Path) -> SourceFile:
    """The helper module as it is now, read only inside the project (never through a link
    out of it)."""
    try:
        return decode_source(path, observed.read_inside(path, root))
    except OSError as error:
        raise SourceError(f"cannot read: {os_error_reason(error)}") from None


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
