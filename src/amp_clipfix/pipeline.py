"""The pipeline from paths to findings and fixed file contents, walked once in one direction.
It only orchestrates; each stage, and the cache it keeps, lives in its own package:

discover (project/) -> read + parse + collect per file, resolve per project (analysis/:
project_collect.py, with the collection and resolution caches) -> find (rules/) -> choose fixes
and make them (fixes/) -> a RunResult (results.py). Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collection import Collection, Progress, read_as_config
from amp_clipfix.analysis.project_collect import collect_project, collect_source
from amp_clipfix.kinds import FileError, Strategy
from amp_clipfix.project.discover import Excludes, Project, discover, find_project_root
from amp_clipfix.project.pins import resolve_target, resolve_torch
from amp_clipfix.project.torch_release import TorchTarget
from amp_clipfix.project.version import Target
from amp_clipfix.records import record, replace
from amp_clipfix.results import FileChange, RunResult, merge, project_result
from amp_clipfix.sources.prefilter import holds, may_need_search

if TYPE_CHECKING:
    from amp_clipfix.models import Edit, Finding
    from amp_clipfix.rules.base import Rule


@record(frozen=True)
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


def run_source(path: Path, data: bytes, options: Options) -> RunResult:
    """One file's contents given directly (stdin); linking stays within it, the pins are those
    of the project the given name lies in."""
    root = find_project_root(path)
    target, warnings = project_target(root, options)
    result = process(collect_source(path, data), options, target, files_seen=1)
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
    searching, left_out = searching_rules_of(collection)
    words = tuple(word for rule in searching for word in rule.words)
    facts = None  # project_facts gives None too without a word: its module is not imported
    if words:
        from amp_clipfix.analysis.project_resolve import project_facts

        facts = project_facts(collection, target, words)
    if not files and facts is None:  # nothing read has a site and no rule searches: no finding
        read_errors = tuple(collection.errors)
        return RunResult((), (), read_errors, files_seen, collection.files_parsed, projects=1)
    from amp_clipfix.fixes.changes import fix_project
    from amp_clipfix.fixes.choose import choose_fixes
    from amp_clipfix.rules import RULES, find_findings

    # every rule but the searching ones whose required library class the project never names
    chosen = [rule for rule in RULES.values() if rule.code not in left_out]
    linked = find_findings(files, target, chosen, facts=facts)
    if facts is not None and facts.settle is not None:
        facts.settle()  # the word-holding files no search parsed that do not parse
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
        from amp_clipfix.output.machine import change_edits

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
        # the collection's parses and the files a rule's own search parsed (never both)
        files_parsed=collection.files_parsed + len(collection.searched),
        projects=1,
        edits=edits,
    )


def searching_rules_of(collection: Collection) -> tuple[list[Rule], set[str]]:
    """The rules with their own search whose needed words some file holds (their words are
    read), and the codes of those that cannot find anything: a library class each of their
    findings needs made or declared (`Rule.requires`) is named in no file. The rules are a
    later stage than the analysis, so the pipeline asks them; when no file holds a word any
    searching rule looks for, none is imported."""
    if collection.root is None or not may_need_search(
        (data, read_as_config(path), holds) for path, data in collection.searchable.items()
    ):
        return [], set()
    from amp_clipfix.rules import searching_rules

    texts = collection.searchable.values()
    rules = searching_rules()
    named = {word for rule in rules for word in rule.requires}
    absent = {
        word
        for word in named
        if not any(may_name(path, data, word) for path, data in collection.searchable.items())
    }
    left_out = {rule.code for rule in rules if absent.intersection(rule.requires)}
    return [
        rule
        for rule in rules
        if rule.code not in left_out
        and any(word in data for data in texts for word in rule.needed_words)
    ], left_out


def may_name(path: Path, data: bytes, word: bytes) -> bool:
    """Whether a file may write the ASCII identifier `word`: as its bytes (a notebook: also
    through a JSON escape), or spelled with other characters that Python reads as it (NFKC:
    `Fabrⅰc` is `Fabric`), looked for only in a text that is not all ASCII."""
    from amp_clipfix.sources import adapter_for

    if adapter_for(path).may_mention(data, word):
        return True
    if data.isascii():
        return False
    import unicodedata

    text = data.decode("utf-8", "replace")
    return word.decode("ascii") in unicodedata.normalize("NFKC", text)
