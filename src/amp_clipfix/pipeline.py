"""The pipeline from paths to findings and fixed file contents, walked once in one direction.
It only orchestrates; each stage, and the cache it keeps, lives in its own package:

discover (project/) -> read + parse + collect per file, resolve per project (analysis/:
project_collect.py, with the collection and resolution caches) -> find (rules/) -> choose fixes
and make them (fixes/) -> a RunResult (results.py). Showing, confirming and writing are the CLI's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collection import Collection, Progress, ReadFiles, read_as_config
from amp_clipfix.analysis.project_collect import collect_project, collect_source
from amp_clipfix.kinds import ErrorKind, FileError, Strategy
from amp_clipfix.project.discover import Excludes, Project, discover, find_project_root
from amp_clipfix.project.pins import ProjectFiles, resolve_target, resolve_torch
from amp_clipfix.project.torch_release import TorchTarget
from amp_clipfix.project.version import Target
from amp_clipfix.records import record, replace
from amp_clipfix.results import FileChange, RunResult, merge, project_result
from amp_clipfix.sources.prefilter import holds, may_need_search

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import ProjectFacts
    from amp_clipfix.models import Edit, FileSites, Finding
    from amp_clipfix.project.style import Style
    from amp_clipfix.rules.base import Rule
    from amp_clipfix.rules.gate import Gate


@record(frozen=True)
class Options:
    """What the user asked for, the same for every project of a run."""

    strategy: Strategy
    target: Target | None = None  # --lightning-version / configuration; None: the project's pins
    torch: TorchTarget | None = None  # --torch-version; None: the project's pins
    fix: bool = False
    with_edits: bool = False  # per-finding edits, for JSON, SARIF and rdjson output
    jobs: int = 1
    prefilter: bool = True
    helper_module: str | None = None  # `helper-module`: import the fixes' helpers from there
    # Report (and fix) only findings these keep, e.g. selected codes with a site in given files.
    keep: Callable[[Finding], bool] | None = None
    # Each project's own settings (its `[tool.amp-clipfix]`): its files and options, or an
    # error line when its configuration is broken.
    configure: Callable[[Project, Options], tuple[Project, Options] | FileError] | None = None
    cache: bool = True  # per-file results cached on disk by content hash
    # --tracked-only: the files git's index holds in the project (a file a fix needs that the
    # index lacks is an error: the commit would go without it); None: not asked.
    index: frozenset[str] | None = None  # paths.index_name of each file


def run(
    paths: Sequence[Path],
    options: Options,
    exclude: Excludes = (),
    progress: Progress | None = None,
    force_exclude: bool = False,
    implied: frozenset[Path] = frozenset(),
    tracked_only: bool = False,  # each project's configure keeps what git's index holds
) -> RunResult:
    try:
        discovery = discover(paths, exclude, force_exclude, implied, tracked_only)
    except Exception as failure:  # noqa: BLE001 - one line per path given, exit 2
        from amp_clipfix.analysis.project_resolve import stage_error

        failed = tuple(stage_error("finding the files", failure, path) for path in paths)
        return RunResult((), (), failed, files_seen=0, files_parsed=0, projects=0)
    if progress is not None:
        progress.planned(sum(len(project.files) for project in discovery.projects))
    results = []
    summaries = []
    errors = list(discovery.errors)
    for found in discovery.projects:
        configured = options.configure(found, options) if options.configure else None
        if isinstance(configured, FileError):  # its configuration is broken: skip it, go on
            errors.append(configured)
            if progress is not None:
                progress.done(len(found.files))
            continue
        project, project_options = configured or (found, options)  # may be another object
        target, warnings, pin_errors = project_target(project.root, project_options, project.files)
        errors.extend(pin_errors)
        try:  # the queries may skip the catch-up where it is certain (certificate.py)
            collection, result, style = analysed_project(
                project, options, project_options, target, progress, certify=True
            )
        except uncertified():  # it was not: analysed again, every query caught up
            import gc

            gc.collect()  # the attempt's analysis (cycles: the run's collector is off)
            collection, result, style = analysed_project(
                project, options, project_options, target, None, certify=False
            )
        if collection.queries is not None:
            collection.queries.prune()  # the query entries this run did not use
        if collection.cache is not None:  # the per-file answers it made (per_file_entry.py)
            collection.cache.save_per_file()
        if project_options.fix and result.changes:
            again = rounds_of(project, project_options, target, collection, style)
            result = to_fixpoint(result, project.root, again)
        results.append(replace(result, notes=warnings, targets=((project.root, target),)))
        summaries.append(project_result(project.root, target, result, project_options.strategy))
        if found is not discovery.projects[-1]:  # another comes: this one's analysis goes
            from amp_clipfix.analysis.project_resolve import release_analysis

            release_analysis(collection)
    merged = merge(results, errors, projects=len(discovery.projects))
    return replace(
        merged,
        notes=discovery.notes + merged.notes,
        per_project=tuple(summaries),
    )


def uncertified() -> type[BaseException]:
    """certificate.Uncertified, imported when an exception reaches the handler that names it:
    only an analysis raises it, and a project with nothing to analyse imports none."""
    from amp_clipfix.analysis.certificate import Uncertified

    return Uncertified


def analysed_project(
    project: Project,
    options: Options,
    project_options: Options,
    target: Target,
    progress: Progress | None,
    certify: bool,
) -> tuple[Collection, RunResult, Style | None]:
    """One project collected and processed (`certify`: its queries may skip the catch-up where
    it is certain, certificate.py), and its style when it is fixed."""
    collection = collect_project(
        project,
        options.jobs,
        options.prefilter,
        progress,
        cache=options.cache,
        keep_outcomes=project_options.fix,
        certify=certify,
        restore=certify,  # a second attempt takes no collection the first one stored
    )
    style = None
    if options.fix:  # once per project; a check never reads the style (nor configparser)
        from amp_clipfix.project.style import project_style

        style = project_style(project.root)
    result = process(
        collection,
        project_options,
        target,
        len(project.files),
        project.linked_inside,
        project.root,
        style,
    )
    return collection, result, style


def project_target(
    root: Path, options: Options, files: tuple[Path, ...] = ()
) -> tuple[Target, tuple[str, ...], tuple[FileError, ...]]:
    """The Lightning release(s) a project runs on, and the torch it runs with: the command line
    or configuration, else its own pins (project/pins.py), else what its code (`files`) runs
    on; the warnings about pin files that could not be read, and the errors of those past a
    reader's limit (one per file)."""
    memo = None
    if options.cache:  # each pin file's readers' answers, by its bytes (pin_answers.py)
        from amp_clipfix.analysis.cache import Cache
        from amp_clipfix.project.pin_answers import PinMemo

        memo = PinMemo(Cache(root))
    pin_files = ProjectFiles(root, memo)  # both searches ask the same files: read once
    resolution = resolve_target(root, options.target, files, pin_files)
    torch = resolve_torch(root, options.torch, pin_files)
    if memo is not None:
        memo.save()
    target = replace(resolution.target, torch=torch.target)
    errors = {error.path: error for error in resolution.errors}
    for error in torch.errors:
        errors.setdefault(error.path, error)
    return target, resolution.warnings + torch.warnings, tuple(errors.values())


def run_source(path: Path, data: bytes, options: Options) -> RunResult:
    """One file's contents given directly (stdin); linking stays within it, the pins are those
    of the project the given name lies in."""
    root = find_project_root(path)
    target, warnings, pin_errors = project_target(root, options)
    result = process(collect_source(path, data), options, target, files_seen=1)
    result = replace(result, errors=(*pin_errors, *result.errors))
    if options.fix and result.changes:

        def again(fixed: Mapping[Path, bytes]) -> RunResult:
            collection = collect_source(path, fixed.get(path, data))
            return process(collection, replace(options, with_edits=False), target, 1)

        result = to_fixpoint(result, root, again)
    return replace(result, notes=warnings, targets=((root, target),))


# The rounds of fixes that may change files (ruff allows 100); the fixes here settle in one or
# two (tests/test_compose.py has one that needs two).
MAX_ROUNDS = 4


def rounds_of(
    project: Project,
    options: Options,
    target: Target,
    first: Collection,
    style: Style | None = None,
) -> Callable[[Mapping[Path, bytes]], RunResult]:
    """One more round of a project's fixes: the project as the first round read it with the
    fixed bytes in place of its files' own (and the files the fixes created), found, chosen
    and fixed. Only the files whose bytes a fix changed are read and parsed again (the others'
    bytes, parses and summaries are the first round's); the resolution and searches run over
    the whole project: a fix in one file changes another's values (callers' arguments)."""

    def again(fixed: Mapping[Path, bytes]) -> RunResult:
        files = tuple(sorted({*project.files, *fixed}))
        collection = collect_project(
            replace(project, files=files),
            options.jobs,
            options.prefilter,
            fixed=fixed,
            previous=first,
        )
        result = process(
            collection,
            replace(options, with_edits=False),
            target,
            len(files),
            project.linked_inside,
            project.root,
            style,
        )
        from amp_clipfix.analysis.project_resolve import release_analysis

        release_analysis(collection)  # the round's own (the trees of fixed files): not first's
        return result

    return again


def to_fixpoint(
    first: RunResult, root: Path, again: Callable[[Mapping[Path, bytes]], RunResult]
) -> RunResult:
    """Re-check the fixed files until the fixes change nothing more, as ruff does: each round
    reads the project as the previous rounds left it, so a fix whose target a round removed is
    not found again, an edit that overlapped another (deferred) is made, and a fix that made
    another wrong is seen. The changes shown and written are the last round's bytes against
    the files' own; the findings reported are the first round's, plus any finding the fixed
    files have that the original had not (a fix must not make one). When the rounds do not
    settle within MAX_ROUNDS, nothing of the project is changed and an error says so."""
    changes = {change.source.path: change for change in first.changes}
    errors = list(first.errors)
    for _ in range(MAX_ROUNDS):  # each checks the rounds so far; MAX_ROUNDS may change files
        fixed = {path: change.new_data for path, change in changes.items()}
        round_ = again(fixed)
        errors += [error for error in round_.errors if error not in errors]
        later = [c for c in round_.changes if c.new_data != fixed.get(c.source.path)]
        if not later:
            return settled(first, changes, round_.findings, errors)
        for change in later:
            changes[change.source.path] = composed(changes.get(change.source.path), change)
    message = (
        f"the fixes did not settle after {MAX_ROUNDS} rounds (each changed the files again); "
        "nothing written for this project"
    )
    return replace(first, changes=(), errors=(*errors, FileError(root, message, ErrorKind.FIX)))


def composed(earlier: FileChange | None, later: FileChange) -> FileChange:
    """One file's change over two rounds: the file's own bytes to the later round's, with the
    findings the first round fixed there (their positions are the original's)."""
    if earlier is None:
        return later
    cells = dict((cell, (old, new)) for cell, old, new in earlier.cells)
    for cell, old, new in later.cells:
        cells[cell] = (cells.get(cell, (old, new))[0], new)
    return replace(
        earlier,
        new_data=later.new_data,
        requires=tuple(dict.fromkeys(earlier.requires + later.requires)),
        cells=tuple((cell, old, new) for cell, (old, new) in sorted(cells.items())),
    )


def settled(
    first: RunResult,
    changes: Mapping[Path, FileChange],
    after: Sequence[Finding],
    errors: Sequence[FileError],
) -> RunResult:
    """The run once the fixes settled. A first-round finding that a later round fixed (its
    edit waited for an overlapping one) is listed with its file's change; a finding of the
    fixed files beyond those the fixes left (by rule, file and message: positions moved) is
    reported with no fix of its own, since a fix made it or did not fix what it was for."""
    from collections import Counter

    from amp_clipfix.kinds import active_findings

    def key(finding: Finding) -> tuple[str, Path, str]:
        return finding.code, finding.primary.path, finding.message

    kept = {path: c for path, c in changes.items() if c.new_data != c.source.data}
    fixing = {finding for change in kept.values() for finding in change.findings}
    still = Counter(key(finding) for finding in active_findings(after))
    for finding in active_findings(first.findings):
        if finding in fixing:
            continue
        if still[key(finding)]:
            still[key(finding)] -= 1
        elif finding.fix is not None and finding.primary.path in kept:
            change = kept[finding.primary.path]
            kept[finding.primary.path] = replace(change, findings=(*change.findings, finding))
    note = "found in the files as fixed: a person decides"
    new = []
    for finding in active_findings(after):
        if still[key(finding)]:
            still[key(finding)] -= 1
            new.append(replace(finding, fix=None, refusal=note))
    return replace(
        first,
        findings=first.findings + tuple(new),
        changes=tuple(c for c in first_order(first, kept)),
        errors=tuple(errors),
    )


def first_order(first: RunResult, kept: Mapping[Path, FileChange]) -> list[FileChange]:
    """The changes in the first round's order, then those of files later rounds changed."""
    order = [change.source.path for change in first.changes]
    return [kept[path] for path in dict.fromkeys([*order, *kept]) if path in kept]


def process(
    collection: Collection,
    options: Options,
    target: Target,
    files_seen: int,
    linked_inside: frozenset[Path] = frozenset(),
    root: Path | None = None,
    style: Style | None = None,
) -> RunResult:
    """Link, choose fixes and (when asked) fix the files of one project (`style`: the
    project's, when the caller read it already)."""
    files = [file.sites for file in collection.parsed.values()]
    searching, _ = searching_rules_of(collection)
    words = tuple(word for rule in searching for word in rule.words)
    facts = None  # project_facts gives None too without a word: its module is not imported
    if words:
        from amp_clipfix.analysis.project_resolve import project_facts

        facts = project_facts(collection, target, words)
    if not files and facts is None:  # nothing read has a site and no rule searches: no finding
        read_errors = tuple(collection.errors)
        return RunResult((), (), read_errors, files_seen, collection.files_parsed, projects=1)
    from amp_clipfix.rules import checking_rules

    chosen = checking_rules(rule.code for rule in searching)  # only these rules are imported
    linked = guarded_findings(collection, files, target, chosen, facts, root)
    if collection.evaluator is not None or facts is not None:  # it goes before the fixes
        from amp_clipfix.analysis.project_resolve import end_analysis

        end_analysis(collection, facts)  # the analysis is over
    if options.keep is not None:
        linked = [finding for finding in linked if options.keep(finding)]
    findings: list[Finding] = []
    try:
        if linked:  # else no module of fixes/ is imported (nor the project's style read)
            from amp_clipfix.fixes.choose import choose_fixes

            findings = choose_fixes(linked, options.strategy, target)
    except Exception as failure:  # noqa: BLE001 - reported without fixes, exit 2
        from amp_clipfix.analysis.project_resolve import stage_error

        collection.errors.append(stage_error("choosing fixes", failure, root or collection.root))
        findings = linked
    changes: list[FileChange] = []
    errors = list(collection.errors)
    edits: dict[Finding, tuple[Edit, ...]] = {}
    if options.fix or options.with_edits:
        helpers = options.helper_module if root is not None else None
        if findings:  # without one, fix_project makes no change and no error
            from amp_clipfix.fixes.changes import fix_project

            changes, fix_errors = fix_project(
                ReadFiles(collection),
                findings,
                linked_inside,
                target,
                (helpers, root),
                # an edit that overlaps another waits for the next round (check's machine
                # output shows the first round's edits only)
                defer=True,
                style=style,
            )
            errors.extend(fix_errors)
        if options.fix and options.index is not None and helpers and root is not None:
            from amp_clipfix.fixes.changes import untracked_helper

            errors.extend(untracked_helper(helpers, root, options.index, changes))
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


def guarded_findings(
    collection: Collection,
    files: list[FileSites],
    target: Target,
    chosen: Sequence[Rule | Gate],
    facts: ProjectFacts | None,
    root: Path | None,
) -> list[Finding]:
    """The rules' findings, under the resolution's guard (the same room on the stack, the
    evaluator's own bounds): a rule that fails costs one error line naming the project, and
    the findings of the files' own sites (no search) still stand when they can be made."""
    from amp_clipfix.analysis.project_resolve import deep_stack, stage_error
    from amp_clipfix.rules import find_findings, ruled

    def compute() -> list[Finding]:
        with deep_stack():
            linked = find_findings(files, target, ruled(chosen), facts, collection.bodies)
            if facts is not None and facts.settle is not None:
                facts.settle()  # the word-holding files no search parsed that do not parse
            return linked

    try:
        if collection.queries is not None and facts is not None:
            from amp_clipfix.analysis.rules_query import rules_query
            from amp_clipfix.rules import findings_order

            def check(rule: Rule | Gate) -> list[Finding]:
                return find_findings(files, target, ruled([rule]), facts, collection.bodies)

            with deep_stack():  # one query per searching rule
                found = rules_query(collection, files, target, chosen, facts, check)  # type: ignore[arg-type]
            return findings_order(found)
        return compute()
    except Exception as failure:  # noqa: BLE001 - one error line, the run goes on
        collection.errors.append(stage_error("the rules", failure, root or collection.root))
    try:
        with deep_stack():
            return find_findings(files, target, ruled(chosen))
    except Exception:  # noqa: BLE001 - reported above
        return []


def searching_rules_of(collection: Collection) -> tuple[list[Rule | Gate], set[str]]:
    """The rules with their own search whose needed words some file holds (their words are
    read), and the codes of those that cannot find anything: a library class each of their
    findings needs made or declared (`Rule.requires`) is named in no file. The rules are a
    later stage than the analysis, so the pipeline asks them; when no file holds a word any
    searching rule looks for, none is imported."""
    if collection.root is None or not may_need_search(
        ((path, data, read_as_config(path), holds) for path, data in collection.searchable.items()),
        collection.root,
        collection.cleared,
    ):
        return [], set()
    from amp_clipfix.analysis import gate_texts  # noqa: F401 - registers the gates' text tests
    from amp_clipfix.analysis.queries import found_in_files  # an edit tests the changed files
    from amp_clipfix.rules import searching_rules

    rules = searching_rules()
    named = {word for rule in rules for word in rule.requires}
    packages = {package for rule in rules for package in rule.imports}
    absent = named - found_in_files(collection.queries, collection.searchable, "may_name", named)
    imported = found_in_files(collection.queries, collection.searchable, "may_import", packages)
    left_out = {rule.code for rule in rules if absent.intersection(rule.requires)}
    left_out |= {rule.code for rule in rules if rule.imports and imported.isdisjoint(rule.imports)}
    kept = [rule for rule in rules if rule.code not in left_out]
    words = {word for rule in kept for word in rule.needed_words}  # after an edit: its files
    held = found_in_files(collection.queries, collection.searchable, "may_hold", words)
    return [rule for rule in kept if not held.isdisjoint(rule.needed_words)], left_out
