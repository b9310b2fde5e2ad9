"""The command line: `amp-clipfix check` and `amp-clipfix apply` (contract in DESIGN.md §3).

Exit codes: 0 nothing (left) to fix, 1 findings remain or changes are pending, 2 usage or file
errors. Piped, `apply` prints a plain patch on stdout and everything else on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console

from amp_clipfix import __version__
from amp_clipfix.diff import diff_hunks, format_patch
from amp_clipfix.diff_view import render_file_diff
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import FileChange, RunResult, run
from amp_clipfix.report import display_path, format_findings, plural
from amp_clipfix.version import Version, format_version, resolve_version
from amp_clipfix.write import WriteError, write_atomic

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

STRATEGY_HELP = (
    "How to fix: bf16 rewrites the precision to bf16-mixed (Fabric; changes numerics), unfuse "
    "sets fused=False (keeps numerics, slower step), guard skips clipping where Lightning cannot "
    "clip (warns at run time), auto picks bf16 on Fabric and unfuse on the Trainer."
)


def common_options(function):  # noqa: ANN001, ANN201
    """Options shared by `check` and `apply`."""
    decorators = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path), metavar="[PATHS]..."),
        click.option(
            "--strategy",
            type=click.Choice([s.value for s in Strategy]),
            default=Strategy.AUTO.value,
            show_default=True,
            help=STRATEGY_HELP,
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
            help="Skip files and folders matching GLOB (repeatable).",
        ),
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            default=os.cpu_count() or 1,
            show_default="the number of cores",
            help="Processes that parse files in parallel.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


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
    """


def prepare(
    paths: Sequence[Path], strategy: str, lightning_version: str | None
) -> tuple[list[Path], Strategy, Version, str]:
    try:
        version, version_source = resolve_version(lightning_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--lightning-version") from None
    return list(paths) or [Path(".")], Strategy(strategy), version, version_source


def report_errors(result: RunResult) -> None:
    for error in result.errors:
        click.echo(f"error: {error}", err=True)


@main.command()
@common_options
def check(
    paths: tuple[Path, ...],
    strategy: str,
    lightning_version: str | None,
    exclude: tuple[str, ...],
    jobs: int,
) -> None:
    """Report findings in PATHS (files or folders; default: the current folder).

    Exit 0 when clean, 1 when there are findings, 2 on usage or file errors.
    """
    targets, chosen, version, version_source = prepare(paths, strategy, lightning_version)
    result = run(targets, chosen, version, exclude, jobs=jobs)
    for line in format_findings(result.findings):
        click.echo(line)
    fixable = sum(1 for finding in result.findings if finding.fix is not None)
    click.echo(
        f"{plural(len(result.findings), 'finding')} ({fixable} fixable with --strategy "
        f"{chosen.value}) in {plural(result.files_seen, 'file')}; "
        f"assumed Lightning {format_version(version)} ({version_source})."
    )
    report_errors(result)
    if result.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.findings else EXIT_CLEAN)


@main.command()
@common_options
@click.option("--yes", "-y", is_flag=True, help="Write the fixes without asking.")
@click.option("--dry-run", is_flag=True, help="Show the fixes; never write.")
def apply(
    paths: tuple[Path, ...],
    strategy: str,
    lightning_version: str | None,
    exclude: tuple[str, ...],
    jobs: int,
    yes: bool,
    dry_run: bool,
) -> None:
    """Fix the findings in PATHS: show the change as a unified diff, then write it.

    On a terminal it asks before writing; --yes writes without asking; --dry-run never writes.
    Piped, the diff is a plain patch on stdout (`git apply` takes it) and everything else goes to
    stderr. Exit 0 when nothing is left to fix, 1 when findings remain unfixed or changes are
    pending (dry run, declined), 2 on errors.
    """
    targets, chosen, version, version_source = prepare(paths, strategy, lightning_version)
    result = run(targets, chosen, version, exclude, fix=True, jobs=jobs)
    show_changes(result.changes)
    unfixed = [finding for finding in result.findings if finding.fix is None]
    for line in format_findings(unfixed):
        click.echo(line, err=True)
    click.echo(
        f"{plural(len(result.findings), 'finding')}, {plural(len(result.changes), 'file')} to "
        f"change, {len(unfixed)} left unfixed (strategy {chosen.value}); assumed Lightning "
        f"{format_version(version)} ({version_source}).",
        err=True,
    )
    written = write_changes(result.changes, yes=yes, dry_run=dry_run)
    report_errors(result)
    if result.errors or written is None:
        sys.exit(EXIT_ERROR)
    pending = len(result.changes) - written
    sys.exit(EXIT_FINDINGS if unfixed or pending else EXIT_CLEAN)


def plain_output() -> bool:
    """A plain patch when stdout is not a terminal or colour is switched off."""
    return not sys.stdout.isatty() or "NO_COLOR" in os.environ


def show_changes(changes: Sequence[FileChange]) -> None:
    if plain_output():
        out = sys.stdout.buffer
        for change in changes:
            out.write(
                format_patch(change.source.data, change.new_data, display_path(change.source.path))
            )
        out.flush()
        return
    console = Console()
    for change in changes:
        notes = []
        for finding in change.findings:
            notes.append(f"{finding.code} {finding.message}")
            if finding.fix is not None:
                notes.append(f"fix: {finding.fix.strategy.value} — {finding.fix.safety}")
        render_file_diff(
            console,
            display_path(change.source.path),
            diff_hunks(change.source.data, change.new_data),
            change.source.encoding,
            notes,
        )


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
            write_atomic(change.source, change.new_data)
            written += 1
        except WriteError as error:
            click.echo(f"error: {display_path(change.source.path)}: {error}", err=True)
            failed = True
    click.echo(f"Fixed {plural(written, 'file')}.", err=True)
    return None if failed else written
