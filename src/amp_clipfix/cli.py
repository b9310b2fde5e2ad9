"""The command line: `amp-clipfix check`, `apply` and `explain` (contract in DESIGN.md §3).

Exit codes: 0 nothing (left) to fix, 1 findings remain or changes are pending, 2 usage or file
errors. Piped, `apply` prints a plain patch on stdout and everything else on stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from amp_clipfix import __version__
from amp_clipfix.models import Strategy
from amp_clipfix.output.diff import diff_hunks, format_patch
from amp_clipfix.output.diff_view import render_file_diff
from amp_clipfix.output.formats import Summary, to_github, to_json, to_sarif
from amp_clipfix.output.report import error_line, format_findings, plural
from amp_clipfix.output.terminal import ProgressBar, RunStats, render_summary
from amp_clipfix.output.write import WriteError, write_atomic
from amp_clipfix.paths import display_path
from amp_clipfix.pipeline import FileChange, Options, RunResult, run, run_source
from amp_clipfix.project.config import ConfigError, load_config
from amp_clipfix.project.version import Version, format_version, resolve_version
from amp_clipfix.rules import RULES, render_rule

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif", "github")
STDIN = Path("-")
STDERR = Console(stderr=True)

STRATEGY_HELP = (
    "How to fix: bf16 rewrites the precision to bf16-mixed (Fabric; changes numerics), unfuse "
    "sets fused=False (keeps numerics, slower step), guard skips clipping where Lightning cannot "
    "clip (warns at run time), auto picks bf16 on Fabric and unfuse on the Trainer. "
    "[default: auto, or `strategy` in [tool.amp-clipfix]]"
)


@dataclass(frozen=True)
class Settings:
    """Command-line options merged over `[tool.amp-clipfix]` of the nearest pyproject.toml."""

    paths: tuple[Path, ...]
    strategy: Strategy
    version: Version
    version_source: str
    exclude: tuple[str, ...]
    output_format: str
    jobs: int
    stdin_filename: Path | None
    verbosity: int  # -1 quiet, 0 normal, 1 verbose


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
            help="Lightning release the code runs on (default: the installed one, else 2.6.6). "
            "It decides whether bf16 fixes the Trainer path.",
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
            help="Report format: text for people, json, sarif (code scanning) or github "
            "(workflow annotations).",
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
) -> Settings:
    """Merge options over the configuration; bad values are usage errors (exit 2)."""
    targets = tuple(paths) or (Path("."),)
    if STDIN in targets and len(targets) > 1:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    start = stdin_filename or Path(".") if targets == (STDIN,) else targets[0]
    try:
        config = load_config(start if start.exists() else Path("."))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    try:
        version, version_source = resolve_version(lightning_version or config.lightning_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--lightning-version") from None
    if not lightning_version and config.lightning_version:
        version_source = f"{display_path(config.path)}" if config.path else version_source
    excludes = tuple(exclude) or tuple(config.exclude or ())
    return Settings(
        paths=targets,
        strategy=Strategy(strategy or config.strategy or Strategy.AUTO.value),
        version=version,
        version_source=version_source,
        exclude=excludes + config.extend_exclude,
        output_format=output_format,
        jobs=jobs,
        stdin_filename=stdin_filename,
        verbosity=-1 if quiet else 1 if verbose else 0,
    )


def execute(settings: Settings, fix: bool, stdin_data: bytes | None = None) -> RunResult:
    """Run the pipeline on the paths, or on `stdin_data` when the path is `-`."""
    options = Options(
        strategy=settings.strategy,
        version=settings.version,
        fix=fix,
        with_edits=settings.output_format in ("json", "sarif"),
        jobs=settings.jobs,
    )
    if stdin_data is not None:
        name = settings.stdin_filename or Path("stdin.py")
        return run_source(name, stdin_data, options)
    if settings.verbosity < 0 or not STDERR.is_terminal:
        return run(settings.paths, options, settings.exclude)
    with ProgressBar(STDERR) as progress:
        return run(settings.paths, options, settings.exclude, progress)


def finish(settings: Settings, result: RunResult, started: float, files_fixed: int = 0) -> None:
    """The errors, then the summary table on a terminal (or with -v)."""
    report_errors(result)
    if settings.verbosity < 0 or not (STDERR.is_terminal or settings.verbosity > 0):
        return
    stats = RunStats(
        projects=result.projects,
        files_seen=result.files_seen,
        files_parsed=result.files_parsed,
        findings=result.findings,
        files_fixed=files_fixed,
        errors=len(result.errors),
        seconds=time.perf_counter() - started,
    )
    render_summary(STDERR, stats)


def read_stdin(settings: Settings) -> bytes | None:
    return sys.stdin.buffer.read() if settings.paths == (STDIN,) else None


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


@main.command()
@common_options
def check(**options: object) -> None:
    """Report findings in PATHS (files or folders; default: the current folder; `-`: stdin).

    Exit 0 when clean, 1 when there are findings, 2 on usage or file errors.
    """
    started = time.perf_counter()
    settings = settings_from(**options)  # type: ignore[arg-type]
    result = execute(settings, fix=False, stdin_data=read_stdin(settings))
    emit_report(result, settings, stream_is_stdout=True)
    finish(settings, result, started)
    if result.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if active(result) else EXIT_CLEAN)


@main.command()
@common_options
@click.option("--yes", "-y", is_flag=True, help="Write the fixes without asking.")
@click.option("--dry-run", is_flag=True, help="Show the fixes; never write.")
def apply(yes: bool, dry_run: bool, **options: object) -> None:
    """Fix the findings in PATHS: show the change as a unified diff, then write it.

    On a terminal it asks before writing; --yes writes without asking; --dry-run never writes.
    Piped, the diff is a plain patch on stdout (`git apply` takes it) and everything else goes to
    stderr. With PATH `-`, the fixed code is printed on stdout. Exit 0 when nothing is left to
    fix, 1 when findings remain unfixed or changes are pending (dry run, declined), 2 on errors.
    """
    started = time.perf_counter()
    settings = settings_from(**options)  # type: ignore[arg-type]
    stdin_data = read_stdin(settings)
    result = execute(settings, fix=True, stdin_data=stdin_data)
    unfixed = [finding for finding in active(result) if not finding.resolved]
    if stdin_data is not None:
        emit_report(result, settings, stream_is_stdout=False)
        finish(settings, result, started)
        sys.stdout.buffer.write(result.changes[0].new_data if result.changes else stdin_data)
        sys.exit(EXIT_ERROR if result.errors else EXIT_FINDINGS if unfixed else EXIT_CLEAN)
    if settings.output_format == "text":
        show_changes(result.changes)
        emit_report(result, settings, stream_is_stdout=False, only=unfixed)
    else:
        emit_report(result, settings, stream_is_stdout=True)
    written = write_changes(result.changes, yes=yes, dry_run=dry_run)
    finish(settings, result, started, files_fixed=written or 0)
    if result.errors or written is None:
        sys.exit(EXIT_ERROR)
    pending = len(result.changes) - written
    sys.exit(EXIT_FINDINGS if unfixed or pending else EXIT_CLEAN)


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the rule page of CODE (ACF001, ACF002, ACF003): what it detects, why Lightning
    fails, an example before and after, and the safety of each fix."""
    rule = RULES.get(code.upper())
    if rule is None:
        raise click.BadParameter(
            f"unknown code {code!r}; known codes: {', '.join(RULES)}", param_hint="CODE"
        )
    click.echo(render_rule(rule))


def active(result: RunResult) -> list:
    return [finding for finding in result.findings if not finding.suppressed]


def emit_report(
    result: RunResult, settings: Settings, stream_is_stdout: bool, only: Sequence | None = None
) -> None:
    """The findings in the chosen format; machine formats always go to stdout."""
    summary = Summary.from_findings(
        result.findings,
        files_seen=result.files_seen,
        lightning_version=format_version(settings.version),
        strategy=settings.strategy.value,
        errors=len(result.errors),
    )
    if settings.output_format == "json":
        click.echo(to_json(result.findings, summary, result.edits))
        return
    if settings.output_format == "sarif":
        click.echo(to_sarif(result.findings, summary, result.edits))
        return
    err = not stream_is_stdout
    if settings.output_format == "github":
        click.echo(to_github(result.findings), nl=False)
        err = True
    else:
        for line in format_findings(active(result) if only is None else only):
            click.echo(line, err=err)
    if settings.verbosity >= 0:
        click.echo(summary_line(result, summary, settings), err=err)


def summary_line(result: RunResult, summary: Summary, settings: Settings) -> str:
    findings = active(result)
    parts = [
        f"{plural(len(findings), 'finding')} ({summary.fixable} fixable with --strategy "
        f"{settings.strategy.value}) in {plural(result.files_seen, 'file')}"
    ]
    if summary.suppressed:
        parts.append(f"{summary.suppressed} suppressed")
    if result.changes:
        parts.append(f"{plural(len(result.changes), 'file')} to change")
    line = ", ".join(parts)
    return (
        f"{line}; assumed Lightning {format_version(settings.version)} ({settings.version_source})."
    )


def report_errors(result: RunResult) -> None:
    for note in result.notes:
        click.echo(f"warning: {note}", err=True)
    for error in result.errors:
        click.echo(f"error: {error_line(error)}", err=True)


def plain_output() -> bool:
    """A plain patch when stdout is not a terminal or colour is switched off."""
    return not sys.stdout.isatty() or "NO_COLOR" in os.environ


def show_changes(changes: Sequence[FileChange]) -> None:
    if plain_output():
        out = sys.stdout.buffer
        for change in changes:
            path = display_path(change.source.path)
            out.write(format_patch(change.source.data, change.new_data, path))
        out.flush()
        return
    console = Console()
    for change in changes:
        notes = []
        for finding in change.findings:
            notes.append(f"{finding.code} {finding.message}")
            if finding.fix is not None:
                notes.append(f"fix: {finding.fix.strategy.value} — {finding.fix.safety}")
        path = display_path(change.source.path)
        if not change.cells:
            hunks = diff_hunks(change.source.data, change.new_data)
            render_file_diff(console, path, hunks, change.source.encoding, notes)
        for number, old, new in change.cells:  # a notebook: one diff per changed cell
            hunks = diff_hunks(old.encode(), new.encode())
            render_file_diff(console, f"{path} (cell {number})", hunks, "utf-8", notes)
            notes = []


def is_interactive() -> bool:
    """Someone can answer the prompt: stdin and stderr (where the prompt goes) are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def write_changes(changes: Sequence[FileChange], yes: bool, dry_run: bool) -> int | None:
    """Write (or not) and return how many files were written; None when a write failed."""
    if not changes:
        return 0
    if dry_run:
        click.echo("Dry run: nothing written.", err=True)
        return 0
    if not yes:
        if not is_interactive():
            click.echo(
                "Not a terminal and no --yes: nothing written (use --yes to write, --dry-run "
                "to only show).",
                err=True,
            )
            return 0
        if not click.confirm(
            f"Write these fixes to {plural(len(changes), 'file')}?", default=False, err=True
        ):
            click.echo("Nothing written.", err=True)
            return 0
    written, failed = 0, False
    for change in changes:
        try:
            write_atomic(change.source, change.new_data, change.keep_hard_links)
            written += 1
        except WriteError as error:
            click.echo(f"error: {display_path(change.source.path)}: {error}", err=True)
            failed = True
    click.echo(f"Fixed {plural(written, 'file')}.", err=True)
    return None if failed else written
