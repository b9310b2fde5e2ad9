"""What a run looks at, per project: code selection (`--select`/`--ignore`, like ruff), each
project's own `[tool.amp-clipfix]`, partial runs (`check FILE...`) and git-tracked-only runs
(pre-commit).

Partial runs follow DESIGN.md §6: a file named on the command line brings in the whole project it
belongs to (a Trainer finding links files that are not committed together), and only findings
with a site in a named file (or under a named folder) are reported and fixed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.kinds import ErrorKind, FileError, Strategy
from amp_clipfix.paths import display_path, index_names, listing_names, path_index_name
from amp_clipfix.pipeline import Options
from amp_clipfix.project.config import (
    Config,
    ConfigError,
    find_pyproject,
    helper_module_path,
    load_config,
    load_config_file,
    overrides_of,
    with_overrides,
)
from amp_clipfix.project.discover import PROJECT_MARKERS, Project, find_project_root
from amp_clipfix.project.pins import configured_source, is_pin_file
from amp_clipfix.project.version import Target, parse_version
from amp_clipfix.records import field, record, replace

SELECT_ALL = "ALL"

if TYPE_CHECKING:
    from amp_clipfix.models import Finding


def known_codes() -> tuple[str, ...]:
    from amp_clipfix.rules import RULES  # the registry imports the analysis: only when asked

    return tuple(sorted(RULES))


def unknown_codes(entries: Iterable[str]) -> list[str]:
    """Entries that name no rule: neither a code nor a prefix of one (nor `ALL`)."""
    entries = list(entries)
    if not entries:
        return []
    codes = known_codes()
    return [
        entry
        for entry in entries
        if entry != SELECT_ALL and not any(code.startswith(entry) for code in codes)
    ]


def code_error(where: str, entries: Sequence[str] | None, selects: bool = False) -> str | None:
    """One line naming the unknown codes of `where` (a typo would switch a check off for good,
    so it is an error, as in ruff), or saying that a selection selects nothing (`--select ""`
    from an unset CI variable); None when all is well."""
    if entries is None or (not entries and not selects):
        return None  # nothing to check: the rule registry (and the analysis) stays unimported
    if not entries:
        return f"{where}: selects no code (an empty value; {known_list()}, or ALL)"
    unknown = unknown_codes(entries)
    if not unknown:
        return None
    names = ", ".join(repr(code) for code in unknown)
    return f"{where}: unknown code{'s' if len(unknown) > 1 else ''} {names} ({known_list()})"


def known_list() -> str:
    return f"known codes: {', '.join(known_codes())}"


def config_code_error(config: Config) -> str | None:
    """The first problem with the codes of a configuration's `select` / `ignore`."""
    if config.path is None:
        return None
    name = display_path(config.path)
    return (
        code_error(f"{name}: select", config.select, selects=True)
        or code_error(f"{name}: extend-select", config.extend_select)
        or code_error(f"{name}: ignore", config.ignore)
        or per_file_code_error(f"{name}: per-file-ignores", config.per_file_ignores)
    )


def per_file_code_error(where: str, pairs: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    """The first unknown code of `per-file-ignores` pairs."""
    for glob, codes in pairs:
        problem = code_error(f"{where} {glob!r}", codes)
        if problem is not None:
            return problem
    return None


def split_per_file(values: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`--per-file-ignores "tests/*:ACF001,ACF002"` -> (glob, codes) pairs (ruff's form);
    ValueError for a value without `:`."""
    pairs = []
    for value in values:
        glob, colon, codes = value.rpartition(":")
        if not colon or not glob or not codes.strip():
            raise ValueError(
                f"--per-file-ignores: {value!r} is not GLOB:CODES (like tests/*:ACF001)"
            )
        pairs.append((glob, split_codes([codes])))
    return tuple(pairs)


def split_codes(values: Sequence[str]) -> tuple[str, ...]:
    """`--select ACF001,ACF002 --select ACF003` -> the codes, upper-cased."""
    return tuple(
        part.strip().upper() for value in values for part in value.split(",") if part.strip()
    )


@record(frozen=True)
class Selection:
    """Which codes are reported: `select` (None: all) minus `ignore`; entries may be prefixes."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    # (glob, codes): ignored in the files the glob matches, relative to `base` (ruff's
    # per-file-ignores; a glob without `/` matches a file's name at any depth).
    per_file: tuple[tuple[str, tuple[str, ...]], ...] = ()
    base: Path | None = None

    def allows(self, codes: Sequence[str], path: Path | None = None) -> bool:
        """`codes`: those that name one finding (its rule's, and aliases such as ACF003 for
        the review findings of ACF001 / ACF002): one selected, none ignored (for `path`, the
        file it is reported in, none ignored there either)."""
        selected = self.select is None or any(
            _matches(code, entry) for code in codes for entry in self.select
        )
        ignored = list(self.ignore)
        if path is not None and self.per_file:
            ignored.extend(self.ignored_in(path))
        return selected and not any(_matches(code, entry) for code in codes for entry in ignored)

    def ignored_in(self, path: Path) -> list[str]:
        """The codes per-file-ignores ignores in `path`."""
        from amp_clipfix.project.discover import glob_matches

        absolute = _absolute(path)
        base = _absolute(self.base) if self.base is not None else Path(os.getcwd())
        try:
            relative = absolute.relative_to(base).as_posix()
        except ValueError:
            relative = absolute.as_posix()
        return [
            code
            for glob, codes in self.per_file
            if glob_matches(relative, absolute.name, glob)
            for code in codes
        ]


def _matches(code: str, entry: str) -> bool:
    return entry == SELECT_ALL or code.startswith(entry)


@record(frozen=True)
class Scope:
    """The paths discovery walks, and the paths findings must touch (None: every finding)."""

    targets: tuple[Path, ...]
    only: tuple[Path, ...] | None = None
    # Targets nobody named: the project roots a partial run walks (no notes for them).
    implied: frozenset[Path] = frozenset()

    def touches(self, finding: Finding) -> bool:
        """A site in a named file or under a named folder; links count as what they name (a
        named link and its target found by the walk are one file)."""
        return Touching(self.only)(finding)


class Touching:
    """`Scope.touches` for the findings of one run: each named path's real path asked once,
    and each site's file decided once, not once per finding and site (NeMo's hook command: 410
    `realpath`s for 118 findings, ~0.02 s). Within a run a path has one real path and one
    identity (the replay notes the answers; a second, different one would only mark the run
    as not replayable)."""

    def __init__(self, only: tuple[Path, ...] | None) -> None:
        self.only = only
        self.named: set[Path] | None = None
        # a site's file: whether it or its real path is a named path or lies under one (the
        # same answer for each of its sites: a finding has several, a file many findings)
        self.verdicts: dict[Path, bool] = {}
        self.files: frozenset[tuple[int, int]] | None = None  # _named_files, when first asked

    def __call__(self, finding: Finding) -> bool:
        if self.only is None:
            return True
        if self.named is None:
            self.named = {*self.only, *(Path(observed.realpath(path)) for path in self.only)}
        for site in finding.sites:
            verdict = self.verdicts.get(site.path)
            if verdict is None:
                verdict = self.verdicts[site.path] = self.touched(site.path)
            if verdict:
                return True
        return False

    def touched(self, file: Path) -> bool:
        """Whether `file`, as given or as its real path, is named or lies under a named path.
        When every named path is a file, nothing lies under one, and another file (another
        device and inode) has another real path: `file`'s is not asked (`realpath` asks each
        part of the path, a `stat` once; NeMo's hook command: ~0.01 s for 100 files)."""
        assert self.named is not None
        absolute = _absolute(file)
        if absolute in self.named:
            return True
        if self.files is None:
            self.files = _named_files(self.only or ())
        try:
            if self.files and observed.identity(file)[:2] not in self.files:
                return False
        except OSError:
            pass
        real = Path(observed.realpath(file))
        return any(
            path in self.named or any(folder in self.named for folder in path.parents)
            for path in (absolute, real)
        )


def _named_files(named: tuple[Path, ...]) -> frozenset[tuple[int, int]]:
    """The device and inode of each named path when all are files, else none (a folder's real
    path has real paths under it)."""
    files = set()
    for path in named:
        try:
            if not observed.is_file(path):
                return frozenset()
            files.add(observed.identity(path)[:2])
        except OSError:
            return frozenset()
    return frozenset(files)


def partial_scope(paths: Sequence[Path]) -> Scope:
    """A named file that lies in a project (a folder with a project marker) brings in that
    whole project; findings are then limited to those with a site under a named path. A named
    pin file (`pyproject.toml`, `requirements.txt`, a lock file: what pre-commit passes when a
    commit changes only pins) names its whole project, whose findings it can change; so does
    `setup.py` or `environment.yml`, which are also read as code."""
    targets: list[Path] = []
    only: list[Path] = []
    implied: set[Path] = set()
    for path in paths:
        if observed.is_file(path) and is_pin_file(path):
            root = find_project_root(path)
            targets.append(root)
            only.append(root)
            continue
        targets.append(path)
        only.append(path)
        if not observed.is_file(path):
            continue
        root = find_project_root(path)
        if any(observed.lexists(root / marker) for marker in PROJECT_MARKERS):
            targets.append(root)
            implied.add(root)
    if targets == list(paths):
        return Scope(tuple(paths))
    unique = tuple(dict.fromkeys(targets))
    named = {_absolute(path) for path in only}
    return Scope(unique, tuple(_absolute(path) for path in only), frozenset(implied - named))


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


@record(frozen=True)
class CommandLine:
    """What the command line fixed for every project; unset values come from each project's
    configuration."""

    strategy: str | None = None
    lightning_version: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    scope: Scope = field(default_factory=lambda: Scope(()))
    tracked_only: bool = False
    exclude: tuple[str, ...] = ()  # --exclude: replaces each configuration's `exclude`
    extend_select: tuple[str, ...] = ()  # --extend-select: added to the selection
    # --per-file-ignores: replaces each configuration's `per-file-ignores` (None: not given)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    config_file: Path | None = None  # --config PATH: the configuration of every project
    overrides: tuple[str, ...] = ()  # --config "KEY = VALUE", over every configuration
    safe_only: bool = False  # `check --fix` / `--diff`: an unsafe strategy needs --unsafe-fixes


def project_keep(selection: Selection, scope: Scope):  # noqa: ANN201 - a closure
    touches = Touching(scope.only)

    def keep(finding: Finding) -> bool:
        from amp_clipfix.rules import codes_of  # a finding exists: the registry is imported

        path = finding.primary.path if selection.per_file else None
        return selection.allows(codes_of(finding), path) and touches(finding)

    return keep


class ProjectConfigurer:
    """`Options.configure`: a project's own `[tool.amp-clipfix]` (its nearest pyproject.toml)
    applies to its files, every key, and to no other project's: the run's base options hold
    the command line only, and each project, the first PATH's included, merges its own
    configuration over them here. Command-line options win; git-untracked files are dropped
    when asked. Warnings are kept for the CLI to print once."""

    def __init__(self, command_line: CommandLine) -> None:
        self.command_line = command_line
        self.warnings: list[str] = []
        self._configs: dict[Path, Config | ConfigError] = {}

    def config(self, root: Path) -> Config:
        """The configuration of the project at `root`, read once per run (raises ConfigError)."""
        if root not in self._configs:
            try:
                self._configs[root] = self._load(root)
            except ConfigError as error:
                self._configs[root] = error
        found = self._configs[root]
        if isinstance(found, ConfigError):
            raise found
        return found

    def _load(self, root: Path) -> Config:
        """`--config PATH` for every project, else the project's own; then the overrides."""
        line = self.command_line
        if line.config_file is not None:
            config = load_config_file(line.config_file)
        else:
            config = load_config(root)
        return with_overrides(config, overrides_of(line.overrides))

    def excludes(self, root: Path) -> tuple[str, ...]:
        """The globs discovery skips in the project at `root`: `--exclude` or the
        configuration's `exclude`, plus its `extend-exclude`. A broken configuration excludes
        nothing here; `__call__` reports it and skips the project."""
        try:
            config = self.config(root)
        except ConfigError:
            return self.command_line.exclude
        return (self.command_line.exclude or config.exclude or ()) + config.extend_exclude

    def __call__(self, project: Project, options: Options) -> tuple[Project, Options] | FileError:
        index = None
        if self.command_line.tracked_only:
            project, index = self._tracked(project)
        try:
            config = self.config(project.root)
        except ConfigError as error:
            return FileError(
                find_pyproject(project.root),
                f"{error_message(error)}; project {display_path(project.root)} skipped",
                ErrorKind.READ,
            )
        problem = config_code_error(config)
        if problem is not None and config.path is not None:
            message = f"{error_message(ConfigError(problem))}; project skipped"
            return FileError(config.path, message, ErrorKind.READ)
        try:
            options = self._with_config(options, config)
        except ValueError as error:
            return FileError(config.path, f"{error}; project skipped", ErrorKind.READ)
        if config.helper_module:
            try:
                helper_module_path(project.root, config.helper_module)
            except ConfigError as error:
                message = f"{error_message(error)}; project {display_path(project.root)} skipped"
                return FileError(config.path, message, ErrorKind.READ)
        selection = selection_for(self.command_line, config, project.root)
        keep = project_keep(selection, self.command_line.scope)
        return project, replace(options, keep=keep, index=index)

    def _with_config(self, options: Options, config: Config) -> Options:
        """The nearest configuration wins whole (as in ruff): what it leaves unset takes the
        command line's value or the default, never another project's configuration."""
        line = self.command_line
        strategy = line.strategy or config.strategy or Strategy.AUTO.value
        if line.safe_only and strategy != Strategy.AUTO.value and not is_safe_strategy(strategy):
            raise ValueError(
                f"strategy {strategy!r} is an unsafe fix: add --unsafe-fixes to apply it"
            )
        target = options.target if line.lightning_version else None  # None: the project's pins
        if not line.lightning_version and config.lightning_version:
            overridden = "lightning-version" in overrides_of(line.overrides)
            source = (
                "--config" if overridden or config.path is None else configured_source(config.path)
            )
            target = Target.exact(parse_version(config.lightning_version), source)
        return replace(
            options,
            strategy=Strategy(strategy),
            target=target,
            helper_module=config.helper_module,
        )

    def _tracked(self, project: Project) -> tuple[Project, frozenset[str] | None]:
        """The project's files git's index holds, and that index (None: git cannot say)."""
        tracked = git_tracked(project.root)
        if tracked is None:
            self.warnings.append(
                f"{display_path(project.root)}: not a git checkout (or git cannot be asked); "
                "every file is read"
            )
            return project, None
        kept = tuple(path for path in project.files if path_index_name(path) in tracked)
        only, held = self.command_line.scope.only or (), set(kept)  # a set: n paths, not n^2
        for path in project.files:
            if path not in held and path in only:
                self.warnings.append(f"{display_path(path)}: not tracked by git; skipped")
        kept_project = replace(project, files=kept, linked_inside=project.linked_inside & set(kept))
        return kept_project, frozenset(tracked)


def is_safe_strategy(strategy: str) -> bool:
    from amp_clipfix.strategies import is_safe  # models.py: only when a fix is asked for

    return is_safe(Strategy(strategy))


def error_message(error: ConfigError) -> str:
    """The message without the file name it starts with (the error's path carries it)."""
    text = str(error)
    head, separator, rest = text.partition(": ")
    return rest if separator and head.endswith("pyproject.toml") else text


def selection_for(command_line: CommandLine, config: Config, root: Path | None = None) -> Selection:
    """ruff's rules: `--select` replaces the configuration's `select`, `extend-select` (both)
    adds to it; ignores add up; `--per-file-ignores` replaces the configuration's, whose globs
    are relative to its file's folder (else the project's root)."""
    select = command_line.select if command_line.select is not None else config.select
    extend = command_line.extend_select + config.extend_select
    if select is not None and extend:
        select = select + extend
    per_file = command_line.per_file_ignores
    if per_file is None:
        per_file = config.per_file_ignores
    base = config.path.parent if config.path is not None else root
    return Selection(select, command_line.ignore + config.ignore, per_file, base)


def git_tracked(root: Path) -> set[str] | None:
    """The files git tracks under `root`, by `index_name` (None outside a checkout). Names,
    not `Path`s: a pre-commit run asks it of every file of the project, and a `Path` made and
    hashed per file cost ~15 ms of such a run on a 1,300-file tree (of ~0.5 s)."""
    # discovery's question of an implied root under --tracked-only: git is asked once
    listing = observed.git(["--literal-pathspecs", "ls-files", "-z", "--cached", "--", "."], root)
    if listing is None:
        return None
    return set(index_names(str(root), listing_names(listing)))


def suppression_warnings(findings: Sequence[Finding]) -> list[str]:
    """One line per suppression comment (on a site's line) that names an unknown code."""
    if not findings:
        return []
    from amp_clipfix.models import ALL_CODES

    codes = set(known_codes())
    seen: set[tuple[Path, int, str]] = set()
    warnings = []
    for finding in findings:
        for site in finding.sites:
            for code in sorted(site.suppressed_codes or ()):
                key = (site.path, site.span.line, code)
                if code == ALL_CODES or code in codes or key in seen:
                    continue
                seen.add(key)
                where = f"{display_path(site.path)}:{site.shown_span.line}"
                if site.cell is not None:
                    where = f"{display_path(site.path)}:cell {site.cell}:{site.shown_span.line}"
                warnings.append(
                    f"{where}: unknown code {code!r} in a suppression comment (known codes: "
                    f"{', '.join(sorted(codes))})"
                )
    return warnings
