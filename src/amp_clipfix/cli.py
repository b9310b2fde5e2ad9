"""The command line: `amp-clipfix check`, `apply`, `explain` and `schema` (DESIGN.md §3, §6).

Exit codes: 0 nothing (left) to fix, 1 findings remain or changes are pending, 2 usage or file
errors; `--exit-zero` turns 1 into 0. Piped, `apply` prints a plain patch on stdout and
everything else on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from amp_clipfix import __version__, observed, replay
from amp_clipfix.models import ErrorKind, FileError, Finding, Strategy, active_findings
from amp_clipfix.output.diff import diff_hunks
from amp_clipfix.output.patches import patch_of, patch_with_base, project_patch_names
from amp_clipfix.output.report import (
    assumption_lines,
    error_line,
    format_findings,
    plural,
    project_rows,
)
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.paths import display_path
from amp_clipfix.pipeline import FileChange, Options, RunResult, run, run_source
from amp_clipfix.project.config import ConfigError, load_config
from amp_clipfix.project.pins import configured_source
from amp_clipfix.project.torch_release import DEFAULT_TORCH, TorchTarget, parse_torch_version
from amp_clipfix.project.version import Target, parse_version
from amp_clipfix.rules import RULES, render_rule
from amp_clipfix.settings import (
    CommandLine,
    ProjectConfigurer,
    Scope,
    partial_scope,
    project_keep,
    selection_for,
    split_codes,
    suppression_warnings,
    unknown_code_warning,
)

if TYPE_CHECKING:  # rich and the machine formats are imported when output needs them
    from rich.console import Console

    from amp_clipfix.output.formats import Summary

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif", "github", "rdjson", "gitlab")
MACHINE_FORMATS = ("json", "sarif", "rdjson", "gitlab")
STDIN = Path("-")

STRATEGY_HELP = (
    "How to fix: bf16 rewrites the precision to bf16-mixed (Fabric; changes numerics), unfuse "
    "sets fused=False (keeps numerics, slower step), guard skips clipping where Lightning cannot "
    "clip (warns at run time), migrate writes the AMP spelling the target release accepts "
    "(keeps behaviour), native replaces apex AMP with native mixed precision (changes "
    "numerics), auto picks bf16 on Fabric and unfuse on the Trainer. "
    "[default: auto, or `strategy` in [tool.amp-clipfix]]"
)


@functools.cache
def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def stderr_is_terminal() -> bool:
    """Whether stderr gets the progress bar and the summary table, as rich decides it. rich is
    imported only when the answer can be yes (a terminal, or a variable that forces one): a
    piped run (CI, pre-commit) never pays for it."""
    forced = os.environ.get("TTY_COMPATIBLE") or os.environ.get("FORCE_COLOR")
    if not forced and not is_tty(sys.stderr):
        return False
    return stderr_console().is_terminal


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed (a test runner's capture)
        return False


@dataclass(frozen=True)
class Settings:
    """Command-line options merged over `[tool.amp-clipfix]` of the nearest pyproject.toml."""

    paths: tuple[Path, ...]
    strategy: Strategy
    target: Target | None  # --lightning-version, else the configuration's; None: project pins
    exclude: tuple[str, ...]
    output_format: str
    jobs: int
    stdin_filename: Path | None
    verbosity: int  # -1 quiet, 0 normal, 1 verbose
    command_line: CommandLine = field(default_factory=CommandLine)
    exit_zero: bool = False
    output_file: Path | None = None
    warnings: tuple[str, ...] = ()
    configurer: ProjectConfigurer | None = None
    cache: bool = True
    torch: TorchTarget | None = None  # --torch-version; None: each project's pins


def common_options(function):  # noqa: ANN001, ANN201
    """Options shared by `check` and `apply`."""
    decorators = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path), metavar="[PATHS]..."),
        click.option(
            "--strategy", type=click.Choice([s.value for s in Strategy]), help=STRATEGY_HELP
        ),
        click.option(
            "--lightning-version",
            metavar="X.Y[.Z]",
            help="Lightning release the code runs on, for every project (default: each "
            "project's own pins: lightning-version in [tool.amp-clipfix], lock files, "
            "requirements*.txt, pyproject.toml, setup.cfg, setup.py, environment.yml; else the "
            "installed Lightning, else 2.6.6). It decides what is a finding and which fixes apply.",
        ),
        click.option(
            "--torch-version",
            metavar="X.Y[.Z]",
            help="torch release the code runs with, for every project (default: each "
            "project's own pins, read from the same files as Lightning's; else 2.13.0). It "
            "decides which torch.amp spellings a fix may write.",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="GLOB",
            help="Skip files and folders matching GLOB (repeatable; replaces `exclude` of the "
            "configuration).",
        ),
        click.option(
            "--format",
            "output_format",
            type=click.Choice(FORMATS),
            default="text",
            show_default=True,
            help="Report format: text for people, json (schema: `amp-clipfix schema`), sarif "
            "(code scanning), github (workflow annotations), rdjson (reviewdog, with "
            "suggestions) or gitlab (code quality report).",
        ),
        click.option(
            "--select",
            multiple=True,
            metavar="CODES",
            help="Report only these codes or prefixes (comma-separated, repeatable; replaces "
            "`select` of the configuration).",
        ),
        click.option(
            "--ignore",
            multiple=True,
            metavar="CODES",
            help="Never report these codes or prefixes (added to `ignore` of the configuration).",
        ),
        click.option(
            "--exit-zero",
            is_flag=True,
            help="Exit 0 even when findings remain (errors still exit 2).",
        ),
        click.option(
            "--output-file",
            "-o",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Write the report there instead of stdout (the patch of `apply` stays on stdout).",
        ),
        click.option(
            "--tracked-only",
            is_flag=True,
            help="Read only files git tracks (what pre-commit sees): untracked files are "
            "neither read nor written.",
        ),
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            default=os.cpu_count() or 1,
            show_default="the number of cores",
            help="Processes that parse files in parallel.",
        ),
        click.option("--quiet", "-q", is_flag=True, help="No summary and no progress bar."),
        click.option(
            "--verbose", "-v", is_flag=True, help="Also print the summary table when piped."
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            envvar="AMP_CLIPFIX_NO_CACHE",
            help="Neither read nor write the cache of per-file results (.amp_clipfix_cache/); "
            "also AMP_CLIPFIX_NO_CACHE=1.",
        ),
        click.option(
            "--stdin-filename",
            type=click.Path(path_type=Path),
            help="With PATH `-`: the name to report the code read from stdin under.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


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
    torch_version: str | None = None,
) -> Settings:
    """Merge options over the configuration; bad values are usage errors (exit 2)."""
    try:
        os.getcwd()
    except OSError:
        raise click.UsageError(
            "the current folder no longer exists (deleted after cd?); run from an existing one"
        ) from None
    targets = tuple(paths) or (Path("."),)
    if STDIN in targets and len(targets) > 1:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    start = stdin_filename or Path(".") if targets == (STDIN,) else targets[0]
    try:
        config = load_config(start if observed.exists(start) else Path("."))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    try:
        target = requested_target(lightning_version, config.lightning_version, config.path)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--lightning-version") from None
    try:
        torch = requested_torch(torch_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--torch-version") from None
    excludes = tuple(exclude) or tuple(config.exclude or ())
    command_line = CommandLine(
        strategy=strategy,
        lightning_version=lightning_version,
        select=split_codes(select) if select else None,
        ignore=split_codes(ignore),
        scope=Scope(targets) if targets == (STDIN,) else partial_scope(targets),
        tracked_only=tracked_only,
        start_config=config.path,
    )
    warnings = [
        unknown_code_warning(where, codes)
        for where, codes in (
            ("--select", command_line.select or ()),
            ("--ignore", command_line.ignore),
            (f"{display_path(config.path)}: select" if config.path else "", config.select or ()),
            (f"{display_path(config.path)}: ignore" if config.path else "", config.ignore),
        )
    ]
    return Settings(
        paths=targets,
        strategy=Strategy(strategy or config.strategy or Strategy.AUTO.value),
        target=target,
        torch=torch,
        exclude=excludes + config.extend_exclude,
        output_format=output_format,
        jobs=jobs,
        stdin_filename=stdin_filename,
        verbosity=-1 if quiet else 1 if verbose else 0,
        command_line=command_line,
        exit_zero=exit_zero,
        output_file=output_file,
        warnings=tuple(warning for warning in warnings if warning),
        configurer=ProjectConfigurer(command_line),
        cache=not no_cache,
    )


def execute(settings: Settings, fix: bool, stdin_data: bytes | None = None) -> RunResult:
    """Run the pipeline on the paths, or on `stdin_data` when the path is `-`."""
    line = settings.command_line
    options = Options(
        strategy=settings.strategy,
        target=settings.target,
        torch=settings.torch,
        fix=fix,
        with_edits=settings.output_format in MACHINE_FORMATS,
        jobs=settings.jobs,
        keep=project_keep(selection_for(line, load_config_quietly(settings)), line.scope),
        configure=settings.configurer,
        cache=settings.cache,
    )
    if stdin_data is not None:
        name = settings.stdin_filename or Path("stdin.py")
        return run_source(name, stdin_data, options)
    targets = line.scope.targets
    if settings.verbosity < 0 or not stderr_is_terminal():
        return run(targets, options, settings.exclude)
    from amp_clipfix.output.terminal import ProgressBar

    with ProgressBar(stderr_console()) as progress:
        return run(targets, options, settings.exclude, progress)


def load_config_quietly(settings: Settings):  # noqa: ANN201 - a Config
    """The first PATH's configuration again (already validated by `settings_from`)."""
    from amp_clipfix.project.config import Config

    start = settings.command_line.start_config
    return load_config(start) if start is not None else Config()


def finish(settings: Settings, result: RunResult, started: float, files_fixed: int = 0) -> None:
    """The warnings and errors, then the summary table on a terminal (or with -v)."""
    report_errors(result, settings)
    if settings.verbosity < 0 or not (settings.verbosity > 0 or stderr_is_terminal()):
        return
    from amp_clipfix.output.terminal import RunStats, render_summary

    stats = RunStats(
        projects=result.projects,
        files_seen=result.files_seen,
        files_parsed=result.files_parsed,
        findings=result.findings,
        files_fixed=files_fixed,
        errors=len(result.errors),
        seconds=time.perf_counter() - started,
    )
    render_summary(stderr_console(), stats)


def read_stdin(settings: Settings) -> bytes | None:
    return sys.stdin.buffer.read() if settings.paths == (STDIN,) else None


def few_garbage_collections() -> None:
    """The syntax trees of a run are millions of objects that live to its end and hold no
    cycles; with the default thresholds the collector walks them again and again (half the
    time of a 5 MB module). A short-lived command collects seldom instead."""
    gc.set_threshold(100_000, 50, 1_000)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="amp-clipfix")
def main() -> None:
    """Find and fix PyTorch Lightning code that clips gradients of a fused optimizer under
    mixed precision, which makes Lightning raise "Gradient clipping is not implemented for
    optimizers handling the unscaling" (Fabric) or "The current optimizer ... does not allow for
    gradient clipping" (Trainer).

    \b
    amp-clipfix check src/              report findings
    amp-clipfix apply src/              show the fix as a diff, ask, then write
    amp-clipfix apply --dry-run src/ > fix.patch   write nothing; the patch goes to stdout
    amp-clipfix explain ACF001          what a finding means and how each fix behaves
    """
    never_fail_to_encode()
    few_garbage_collections()


def never_fail_to_encode() -> None:
    """A terminal whose encoding cannot show a character (`PYTHONIOENCODING=ascii`, a legacy
    code page) gets an escape instead of a UnicodeEncodeError traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


@main.command()
@common_options
def check(**options: object) -> None:
    """Report findings in PATHS (files or folders; default: the current folder; `-`: stdin).

    A file brings in the whole project it belongs to (a Trainer in another file still links),
    and only findings with a site in a given file are reported. Exit 0 when clean, 1 when there
    are findings (0 with --exit-zero), 2 on usage or file errors.
    """
    started = time.perf_counter()
    settings = settings_from(**options)  # type: ignore[arg-type]
    stdin_data = read_stdin(settings)
    result = execute(settings, fix=False, stdin_data=stdin_data)
    with report_stream(settings, stdout_ok=True) as stream:
        emit_report(result, settings, stream)
    finish(settings, result, started)
    noted = settings.output_file is None and stdin_data is None and settings.verbosity <= 0
    if settings.cache and noted:
        replay.allow()  # all it printed follows from what it read (-v prints the time it took)
    sys.exit(exit_code(settings, result, findings_left=bool(active_findings(result.findings))))


@main.command()
@common_options
@click.option("--yes", "-y", is_flag=True, help="Write the fixes without asking.")
@click.option("--dry-run", is_flag=True, help="Show the fixes; never write.")
@click.option(
    "--patch-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write one <project>.patch per project there (paths relative to each project's root: "
    "`git -C PROJECT apply DIR/PROJECT.patch`) instead of the patch on stdout.",
)
def apply(yes: bool, dry_run: bool, patch_dir: Path | None, **options: object) -> None:
    """Fix the findings in PATHS: show the change as a unified diff, then write it.

    On a terminal it asks before writing; --yes writes without asking; --dry-run never writes.
    Piped, the diff is a plain patch on stdout (`git apply` takes it) and everything else goes to
    stderr. With PATH `-`, the fixed code is printed on stdout and the report (any format) on
    stderr. Exit 0 when nothing is left to fix, 1 when findings remain unfixed or changes are
    pending (dry run, declined; 0 with --exit-zero), 2 on errors.
    """
    started = time.perf_counter()
    settings = settings_from(**options)  # type: ignore[arg-type]
    stdin_data = read_stdin(settings)
    result = execute(settings, fix=True, stdin_data=stdin_data)
    unfixed = [finding for finding in active_findings(result.findings) if not finding.resolved]
    if stdin_data is not None:
        with report_stream(settings, stdout_ok=False) as stream:
            emit_report(result, settings, stream)
        finish(settings, result, started)
        sys.stdout.buffer.write(result.changes[0].new_data if result.changes else stdin_data)
        sys.exit(exit_code(settings, result, findings_left=bool(unfixed)))
    if patch_dir is not None:
        write_patch_dir(result, patch_dir)
    elif settings.output_format == "text":
        show_changes(result)
    if settings.output_format == "text":  # the patch owns stdout; what is left goes to stderr
        with report_stream(settings, stdout_ok=False) as stream:
            emit_report(result, settings, stream, only=unfixed, project_table=True)
    elif settings.output_format != "json":  # before writing: notebook lines are read from disk
        with report_stream(settings, stdout_ok=True) as stream:
            emit_report(result, settings, stream)
    written, write_errors = write_changes(result.changes, yes=yes, dry_run=dry_run)
    result = replace(result, errors=result.errors + tuple(write_errors))
    fixed = fixed_findings(result, written)
    if settings.output_format == "json":  # after writing: it says which findings were fixed
        with report_stream(settings, stdout_ok=True) as stream:
            emit_report(result, settings, stream, fixed=fixed)
    finish(settings, result, started, files_fixed=len(written))
    if wants_project_table(settings, result, patch_dir):
        render_project_table(result, fixed, wrote=bool(written) or not result.changes)
    pending = len(result.changes) - len(written)
    sys.exit(exit_code(settings, result, findings_left=bool(unfixed or pending)))


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the rule page of CODE: what it detects, why Lightning fails, an example before and
    after, and the safety of each fix."""
    rule = RULES.get(code.upper())
    if rule is None:
        raise click.BadParameter(
            f"unknown code {code!r}; known codes: {', '.join(RULES)}", param_hint="CODE"
        )
    click.echo(render_rule(rule))


explain.help = (
    f"{inspect.cleandoc(explain.help or '')}\n\nCODE is one of {', '.join(sorted(RULES))}."
)


@main.command()
def schema() -> None:
    """Print the JSON Schema of `--format json` (draft 7)."""
    from importlib import resources  # only this command reads package data

    text = resources.files("amp_clipfix").joinpath("output/schema.json").read_text("utf-8")
    click.echo(text, nl=not text.endswith("\n"))


def exit_code(settings: Settings, result: RunResult, findings_left: bool) -> int:
    """2 on errors; 1 when findings are left (or changes pending) unless --exit-zero; else 0."""
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings_left and not settings.exit_zero else EXIT_CLEAN


@contextlib.contextmanager
def report_stream(settings: Settings, stdout_ok: bool) -> Iterator[IO[str]]:
    """Where the report goes: --output-file, else stdout (or stderr when stdout carries code
    or a patch)."""
    if settings.output_file is None:
        yield sys.stdout if stdout_ok else sys.stderr
        return
    try:
        with settings.output_file.open("w", encoding="utf-8", newline="\n") as stream:
            yield stream
    except OSError as error:
        raise click.FileError(str(settings.output_file), error.strerror or str(error)) from None


def emit_report(
    result: RunResult,
    settings: Settings,
    stream: IO[str],
    only: Sequence | None = None,
    fixed: frozenset[Finding] = frozenset(),
    project_table: bool = False,
) -> None:
    """The findings in the chosen format, on `stream`. Several projects: the release each
    assumed, one line each (apply's per-project table lists them instead)."""
    from amp_clipfix.output.formats import (
        Summary,
        to_github,
        to_gitlab,
        to_json,
        to_rdjson,
        to_sarif,
    )

    summary = Summary.from_findings(
        result.findings,
        files_seen=result.files_seen,
        lightning_version=lightning_label(result),
        strategy=settings.strategy.value,
        errors=len(result.errors),
        projects=project_targets(result),
    )
    machine = {
        "json": lambda: to_json(result.findings, summary, result.edits, result.errors, fixed),
        "sarif": lambda: to_sarif(result.findings, summary, result.edits, result.errors),
        "rdjson": lambda: to_rdjson(result.findings, result.edits),
        "gitlab": lambda: to_gitlab(result.findings),
    }
    if settings.output_format in machine:
        click.echo(machine[settings.output_format](), nl=False, file=stream)
        return
    if settings.output_format == "github":
        click.echo(to_github(result.findings), nl=False, file=stream)
        stream = sys.stderr
    else:
        for line in format_findings(active_findings(result.findings) if only is None else only):
            click.echo(line, file=stream)
    if settings.verbosity >= 0:
        if len(result.targets) > 1 and not project_table:
            for line in assumption_lines(result.targets):
                click.echo(line, file=stream)
        click.echo(summary_line(result, summary, settings, project_table), file=stream)


def requested_target(
    lightning_version: str | None, configured: str | None, config_path: Path | None
) -> Target | None:
    """The release asked for on the command line, else in the first PATH's configuration; None
    leaves it to each project's pins. Raises ValueError for a malformed version."""
    if lightning_version:
        return Target.exact(parse_version(lightning_version), "--lightning-version")
    if configured and config_path is not None:
        return Target.exact(parse_version(configured), configured_source(config_path))
    return None


def requested_torch(torch_version: str | None) -> TorchTarget | None:
    """The torch asked for on the command line; None leaves it to each project's pins."""
    if not torch_version:
        return None
    return TorchTarget.exact(parse_torch_version(torch_version), "--torch-version")


def lightning_label(result: RunResult) -> str:
    """The release (or range) assumed, as JSON's `lightning_version`; several joined by ", "."""
    return ", ".join(sorted({target.version_label for _, target in result.targets}))


def project_targets(result: RunResult) -> list[dict[str, object]]:
    """Per project: its root and the Lightning it assumed, for JSON and SARIF."""
    return [
        {"root": display_path(root), **target_json(target)}
        for root, target in sorted(result.targets, key=lambda pair: str(pair[0]))
    ]


def target_json(target: Target) -> dict[str, object]:
    return {
        "lightning": target.pin,
        "lightning_version": target.version_label,
        "source": target.source,
        "assumed": target.describe(),
        "releases": [str(release) for release in target.releases],
        "torch": target.torch.pin,
        "torch_source": target.torch.source,
    }


def summary_line(
    result: RunResult, summary: Summary, settings: Settings, project_table: bool = False
) -> str:
    findings = active_findings(result.findings)
    parts = [
        f"{plural(len(findings), 'finding')} ({summary.fixable} fixable with --strategy "
        f"{settings.strategy.value}) in {plural(result.files_seen, 'file')}"
    ]
    if summary.suppressed:
        parts.append(f"{summary.suppressed} suppressed")
    if result.changes:
        parts.append(f"{plural(len(result.changes), 'file')} to change")
    line = ", ".join(parts)
    described = {target.describe() + torch_told(target) for _, target in result.targets}
    if not described:
        return f"{line}."
    if len(described) == 1:
        return terminal_safe(f"{line}; assumed {described.pop()}.")
    releases = {target.version_label for _, target in result.targets}
    return (
        f"{line}; assumed {plural(len(releases), 'Lightning release')} in "
        f"{plural(len(result.targets), 'project')} "
        f"({'see the per-project table' if project_table else 'listed above'})."
    )


def torch_told(target: Target) -> str:
    """`, torch 2.3.1 from requirements.txt` when a pin or --torch-version set the torch (the
    default, the newest torch known, goes unsaid)."""
    return "" if target.torch == DEFAULT_TORCH else f", {target.torch.describe()}"


def report_errors(result: RunResult, settings: Settings) -> None:
    """Warnings (unknown codes anywhere, untracked files, empty paths), then errors: one line
    each, on stderr."""
    warnings = list(settings.warnings)
    if settings.configurer is not None:
        warnings.extend(settings.configurer.warnings)
    warnings.extend(suppression_warnings(result.findings))
    warnings.extend(result.notes)
    for warning in dict.fromkeys(warnings):
        click.echo(terminal_safe(f"warning: {warning}"), err=True)
    for error in result.errors:
        click.echo(terminal_safe(f"error: {error_line(error)}"), err=True)


def plain_output() -> bool:
    """A plain patch when stdout is not a terminal or colour is switched off."""
    return not is_tty(sys.stdout) or "NO_COLOR" in os.environ


def project_roots(result: RunResult) -> dict[Path, Path]:
    """The project root of each changed file."""
    return {
        change.source.path: project.root
        for project in result.per_project
        for change in project.changes
    }


def show_changes(result: RunResult) -> None:
    changes = result.changes
    if plain_output():
        out = sys.stdout.buffer
        out.write(patch_with_base(changes, project_roots(result)))
        out.flush()
        return
    from rich.console import Console

    from amp_clipfix.output.diff_view import render_file_diff

    console = Console()
    for change in changes:
        notes = []
        for finding in change.findings:
            notes.append(f"{finding.code} {finding.message}")
            if finding.fix is not None:
                label = "safe" if finding.fix.safe else "unsafe"
                notes.append(f"fix: {finding.fix.strategy.value} ({label}) — {finding.fix.safety}")
        path = display_path(change.source.path)
        if not change.cells:
            hunks = diff_hunks(change.source.data, change.new_data)
            render_file_diff(console, path, hunks, change.source.encoding, notes)
        for number, old, new in change.cells:  # a notebook: one diff per changed cell
            hunks = diff_hunks(old.encode(), new.encode())
            render_file_diff(console, f"{path} (cell {number})", hunks, "utf-8", notes)
            notes = []


def write_patch_dir(result: RunResult, folder: Path) -> None:
    """One `<project>.patch` per project with changes, paths relative to the project's root."""
    projects = [project for project in result.per_project if project.changes]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, project in zip(project_patch_names([p.root for p in projects]), projects):
            target = folder / name
            target.write_bytes(b"".join(patch_of(c, project.root) for c in project.changes))
            click.echo(f"wrote {display_path(target)} ({display_path(project.root)})", err=True)
    except OSError as error:
        raise click.FileError(str(folder), error.strerror or str(error)) from None


def fixed_findings(result: RunResult, written: Sequence[FileChange]) -> frozenset[Finding]:
    """Findings whose fix is complete and every file of which was written."""
    paths = {change.source.path for change in written}
    return frozenset(
        finding
        for finding in active_findings(result.findings)
        if finding.resolved
        and finding.fix is not None
        and all(site.path in paths for site in finding.fix.targets)
    )


def wants_project_table(settings: Settings, result: RunResult, patch_dir: Path | None) -> bool:
    """The per-project table ends a bulk run (several projects, --patch-dir), a run on a
    terminal and a -v run; a piped single-project run (a pre-commit hook) stays short."""
    if settings.verbosity < 0:
        return False
    bulk = len(result.per_project) > 1 or patch_dir is not None
    return bulk or settings.verbosity > 0 or stderr_is_terminal()


def render_project_table(result: RunResult, fixed: frozenset[Finding], wrote: bool) -> None:
    """The per-project table that ends `apply` (stderr): what a bulk migration needs to read."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    if not result.per_project:
        return
    utf = (getattr(sys.stderr, "encoding", "") or "").lower().replace("-", "") == "utf8"
    table = Table(
        title="amp-clipfix per project", title_justify="left", box=None if not utf else box.SIMPLE
    )
    columns = (
        "project",
        "Lightning",
        "torch",
        "findings",
        "by rule",
        "fixed",
        "left for review",
        "errors",
    )
    for column in columns:
        table.add_column(column, justify="left" if column in ("project", "by rule") else "right")
    for row in project_rows(result.per_project, fixed, wrote):
        table.add_row(*row)
    stderr = stderr_console()
    Console(stderr=True, width=max(stderr.width, 120) if not stderr.is_terminal else None).print(
        table
    )


def is_interactive() -> bool:
    """Someone can answer the prompt: stdin and stderr (where the prompt goes) are terminals."""
    return is_tty(sys.stdin) and is_tty(sys.stderr)


def write_changes(
    changes: Sequence[FileChange], yes: bool, dry_run: bool
) -> tuple[list[FileChange], list[FileError]]:
    """Write (or not); the changes written, and the writes that failed."""
    if not changes:
        return [], []
    if dry_run:
        click.echo("Dry run: nothing written.", err=True)
        return [], []
    if not yes:
        if not is_interactive():
            click.echo(
                "Not a terminal and no --yes: nothing written (use --yes to write, --dry-run "
                "to only show).",
                err=True,
            )
            return [], []
        if not click.confirm(
            f"Write these fixes to {plural(len(changes), 'file')}?", default=False, err=True
        ):
            click.echo("Nothing written.", err=True)
            return [], []
    from amp_clipfix.output.write import WriteError, create_atomic, write_atomic

    written: list[FileChange] = []
    failed: list[FileError] = []
    for change in changes:
        try:
            if change.created:
                create_atomic(change.source.path, change.new_data)
            else:
                write_atomic(change.source, change.new_data, change.keep_hard_links)
            written.append(change)
        except WriteError as error:
            # reported with the run's other errors (and in JSON/SARIF) by `finish`
            failed.append(FileError(change.source.path, str(error), ErrorKind.WRITE))
    click.echo(f"Fixed {plural(len(written), 'file')}.", err=True)
    return written, failed
