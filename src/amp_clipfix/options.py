"""The options of `check` and `apply` merged over the configuration (the first PATH's
`[tool.amp-clipfix]`): what a run is asked to do, before anything is read."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from amp_clipfix import observed
from amp_clipfix.kinds import Strategy
from amp_clipfix.project.config import (
    ConfigError,
    load_config,
    load_config_file,
    overrides_of,
    with_overrides,
)
from amp_clipfix.project.torch_release import TorchTarget, parse_torch_version
from amp_clipfix.project.version import Target, parse_version
from amp_clipfix.records import field, record
from amp_clipfix.settings import (
    CommandLine,
    ProjectConfigurer,
    Scope,
    code_error,
    config_code_error,
    is_safe_strategy,
    partial_scope,
    per_file_code_error,
    split_codes,
    split_per_file,
)

FORMATS = ("text", "json", "sarif", "github", "rdjson", "gitlab")
EDIT_FORMATS = ("json", "sarif", "rdjson")  # the formats that show each fix's edits
STDIN = Path("-")


@record(frozen=True)
class Settings:
    """Command-line options merged over `[tool.amp-clipfix]` of the nearest pyproject.toml."""

    paths: tuple[Path, ...]
    strategy: Strategy
    target: Target | None  # --lightning-version; None: each project's configuration or pins
    output_format: str
    jobs: int
    stdin_filename: Path | None
    verbosity: int  # -1 quiet, 0 normal, 1 verbose
    command_line: CommandLine = field(default_factory=CommandLine)
    exit_zero: bool = False
    output_file: Path | None = None
    configurer: ProjectConfigurer = field(default_factory=lambda: ProjectConfigurer(CommandLine()))
    cache: bool = True
    force_exclude: bool = False
    torch: TorchTarget | None = None  # --torch-version; None: each project's pins
    statistics: bool = False  # `check --statistics`: counts per code instead of findings
    show_fixes: bool = False  # `check --show-fixes`: the findings fixed (or fixable), listed


class UsageProblem(Exception):
    """A bad option or configuration (exit 2). The command line (cli.py) shows it as click
    does a usage error; `one_line`: as `error: ...` alone (`where: error: ...` when a file is
    concerned), as ruff reports a bad `--select`; `param_hint`: the option a bad value was
    given to."""

    def __init__(
        self,
        message: str,
        param_hint: str | None = None,
        one_line: bool = False,
        where: str = "",
    ):
        super().__init__(message)
        self.message, self.param_hint, self.one_line = message, param_hint, one_line
        self.where = where

    @classmethod
    def of_file(cls, text: str) -> UsageProblem:
        """A configuration's problem, `path: message`, as one `path: error: message` line."""
        head, separator, rest = text.partition(": ")
        if separator and head.endswith(".toml"):
            return cls(rest, one_line=True, where=head)
        return cls(text, one_line=True)


def settings_from(
    paths: Sequence[Path],
    strategy: str | None,
    lightning_version: str | None,
    exclude: Sequence[str],
    output_format: str,
    jobs: int,
    stdin_filename: Path | None,
    quiet: bool = False,
    verbose: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    exit_zero: bool = False,
    output_file: Path | None = None,
    tracked_only: bool = False,
    no_cache: bool = False,
    force_exclude: bool = False,
    torch_version: str | None = None,
    extend_select: Sequence[str] = (),
    per_file_ignores: Sequence[str] = (),
    config: Sequence[str] = (),
    safe_only: bool = False,
) -> Settings:
    """Merge options over the configuration; a bad value raises UsageProblem (exit 2)."""
    try:
        os.getcwd()
    except OSError:
        raise UsageProblem(
            "the current folder no longer exists (deleted after cd?); run from an existing one"
        ) from None
    # `--stdin-filename X` alone reads stdin, as ruff does (`-` says so too)
    targets = tuple(paths) or ((STDIN,) if stdin_filename is not None else (Path("."),))
    if STDIN in targets and len(targets) > 1:
        raise UsageProblem("`-` (stdin) cannot be combined with other paths")
    start = stdin_filename or Path(".") if targets == (STDIN,) else targets[0]
    config_file, overrides = config_arguments(config)
    try:  # the first PATH's configuration is checked before anything runs; others per project
        if config_file is not None:
            found = load_config_file(config_file)
        else:
            found = load_config(start if observed.exists(start) else Path("."))
        found = with_overrides(found, overrides_of(overrides))
    except ConfigError as error:
        raise UsageProblem.of_file(str(error)) from None
    try:
        per_file = split_per_file(per_file_ignores) if per_file_ignores else None
    except ValueError as error:
        raise UsageProblem(str(error)) from None
    try:
        target = requested_target(lightning_version)
    except ValueError as error:
        raise UsageProblem(str(error), param_hint="--lightning-version") from None
    try:
        torch = requested_torch(torch_version)
    except ValueError as error:
        raise UsageProblem(str(error), param_hint="--torch-version") from None
    command_line = CommandLine(
        strategy=strategy,
        lightning_version=lightning_version,
        select=split_codes(select) if select else None,
        ignore=split_codes(ignore),
        scope=Scope(targets) if targets == (STDIN,) else partial_scope(targets),
        tracked_only=tracked_only,
        exclude=tuple(exclude),
        extend_select=split_codes(extend_select),
        per_file_ignores=per_file,
        config_file=config_file,
        overrides=overrides,
        safe_only=safe_only,
    )
    if safe_only and strategy not in (None, "auto") and not is_safe_strategy(strategy):
        raise UsageProblem(
            f"--strategy {strategy} is an unsafe fix: add --unsafe-fixes to apply it "
            "(or use `apply --strategy`)",
            one_line=True,
        )
    problem = (
        code_error("--select", command_line.select, selects=True)
        or code_error("--extend-select", command_line.extend_select)
        or code_error("--ignore", command_line.ignore)
        or per_file_code_error("--per-file-ignores", per_file or ())
        or config_code_error(found)
    )
    if problem is not None:
        raise UsageProblem.of_file(problem)
    return Settings(
        paths=targets,
        strategy=Strategy(strategy or Strategy.AUTO.value),
        target=target,
        torch=torch,
        output_format=output_format,
        jobs=jobs,
        stdin_filename=stdin_filename,
        verbosity=-1 if quiet else 1 if verbose else 0,
        command_line=command_line,
        exit_zero=exit_zero,
        output_file=output_file,
        configurer=ProjectConfigurer(command_line),
        cache=not no_cache,
        force_exclude=force_exclude,
    )


def config_arguments(values: Sequence[str]) -> tuple[Path | None, tuple[str, ...]]:
    """`--config` values as ruff reads them: a path to a TOML file (`pyproject.toml`, whose
    `[tool.amp-clipfix]` is read, or `amp-clipfix.toml`), at most one; or `KEY = VALUE`
    overrides, which win over every file."""
    path: Path | None = None
    overrides = []
    for value in values:
        looks_like_file = "=" not in value or observed.is_file(Path(value))
        if not looks_like_file:
            overrides.append(value)
            continue
        if path is not None:
            raise UsageProblem("--config: give one configuration file (and any KEY = VALUE)")
        path = Path(value)
        if not observed.is_file(path):
            raise UsageProblem("no such file (--config)", one_line=True, where=value)
    return path, tuple(overrides)


def requested_target(lightning_version: str | None) -> Target | None:
    """The release asked for on the command line; None leaves it to each project's
    configuration or pins. Raises ValueError for a malformed version."""
    if lightning_version:
        return Target.exact(parse_version(lightning_version), "--lightning-version")
    return None


def requested_torch(torch_version: str | None) -> TorchTarget | None:
    """The torch asked for on the command line; None leaves it to each project's pins."""
    if not torch_version:
        return None
    return TorchTarget.exact(parse_torch_version(torch_version), "--torch-version")
