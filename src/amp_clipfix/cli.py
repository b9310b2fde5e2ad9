"""The command line: `amp-clipfix check`, `apply`, `explain` and `schema` (DESIGN.md §3, §6).

Exit codes: 0 nothing (left) to fix, 1 findings remain or changes are pending, 2 usage or file
errors, 130 interrupted (Ctrl-C); `--exit-zero` turns 1 into 0. Piped, `apply` prints a plain
patch on stdout and everything else on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import click

from amp_clipfix import __version__, run_notes
from amp_clipfix.models import FileError, Strategy, active_findings
from amp_clipfix.options import FORMATS, MACHINE_FORMATS, STDIN, Settings, settings_from
from amp_clipfix.output.report import plural
from amp_clipfix.pipeline import Options, RunResult, run, run_source
from amp_clipfix.project.discover import Project, exclusion, find_project_root
from amp_clipfix.reporting import (
    emit_report,
    finish,
    render_project_table,
    report_stream,
    stderr_console,
    stderr_is_terminal,
    wants_project_table,
)
from amp_clipfix.settings import Selection, project_keep
from amp_clipfix.strategies import DOES, auto_description, safety_label
from amp_clipfix.writing import (
    PROMPT,
    Interrupted,
    change_shower,
    fixed_findings,
    is_interactive,
    plain_output,
    project_roots,
    show_changes,
    write_changes,
    write_patch_dir,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def strategy_help() -> str:
    """`--strategy`'s help, rendered from what the code does (strategies.py)."""
    does = "; ".join(
        f"{strategy.value} {DOES[strategy]}, {safety_label(strategy)}" for strategy in DOES
    )
    return (
        f"How to fix: {does}. {auto_description()}. "
        "[default: auto, or `strategy` in [tool.amp-clipfix]]"
    )


STRATEGY_HELP = strategy_help()


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
            "--force-exclude",
            is_flag=True,
            help="Apply exclude, extend-exclude and the default excludes to paths named on the "
            "command line too (as ruff does; what pre-commit hooks need): an excluded named "
            "path is skipped with a note.",
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


def execute(settings: Settings, fix: bool, stdin_data: bytes | None = None) -> RunResult:
    """Run the pipeline on the paths, or on `stdin_data` when the path is `-`. The base
    options hold the command line only; each project's configuration is merged by
    `settings.configurer`."""
    line = settings.command_line
    options = Options(
        strategy=settings.strategy,
        target=settings.target,
        torch=settings.torch,
        fix=fix,
        with_edits=settings.output_format in MACHINE_FORMATS,
        jobs=settings.jobs,
        keep=project_keep(Selection(line.select, line.ignore), line.scope),
        configure=settings.configurer,
        cache=settings.cache,
    )
    if stdin_data is not None:
        name = settings.stdin_filename or Path("stdin.py")
        root = find_project_root(name)
        configured = settings.configurer(Project(root, (name,)), options)
        if isinstance(configured, FileError):
            return RunResult((), (), (configured,), files_seen=0, files_parsed=0, projects=0)
        reason = exclusion(Path(os.path.abspath(name)), root, settings.configurer.excludes(root))
        if settings.force_exclude and reason is not None:  # an editor's buffer: left as it is
            note = f"{name}: excluded ({reason}); skipped (--force-exclude)"
            return RunResult((), (), (), files_seen=0, files_parsed=0, projects=0, notes=(note,))
        return run_source(name, stdin_data, configured[1])
    targets = line.scope.targets
    excludes = settings.configurer.excludes
    walk = functools.partial(run, force_exclude=settings.force_exclude, implied=line.scope.implied)
    if settings.verbosity < 0 or not stderr_is_terminal():
        return walk(targets, options, excludes)
    from amp_clipfix.output.terminal import ProgressBar

    run_notes.refuse()  # a progress bar is drawn as time passes: never replayed
    with ProgressBar(stderr_console()) as progress:
        return walk(targets, options, excludes, progress)


def read_stdin(settings: Settings) -> bytes | None:
    return sys.stdin.buffer.read() if settings.paths == (STDIN,) else None


def few_garbage_collections() -> None:
    """The syntax trees of a run are millions of objects that live to its end and hold no
    cycles; with the default thresholds the collector walks them again and again (half the
    time of a 5 MB module). A short-lived command collects seldom instead."""
    gc.set_threshold(100_000, 50, 1_000)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells and git report for Ctrl-C


class InterruptibleGroup(click.Group):
    """Ctrl-C anywhere in a command (analysis, the prompt) ends it with exit 130 and one line
    on stderr, instead of click's "Aborted!" and exit 1, the code of "findings remain"."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            if PROMPT.open:  # the question's line is still open: end it first
                click.echo(err=True)
            written = interrupt.written if isinstance(interrupt, Interrupted) else 0
            what = (
                "nothing written"
                if not written
                else f"{plural(written, 'file')} written before it, nothing more"
            )
            click.echo(f"amp-clipfix: interrupted (Ctrl-C): {what}.", err=True)
            sys.exit(EXIT_INTERRUPTED)


@click.group(cls=InterruptibleGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    noted = settings.output_file is None and stdin_data is None
    if settings.cache and noted:
        run_notes.allow()  # all it printed follows from what it read, unless refused above
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

    On a terminal it asks per file before writing (y, n, a: this and the rest, q: nothing more,
    ?: help); --yes writes without asking; --dry-run never writes.
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
    asking = bool(result.changes) and not yes and not dry_run and is_interactive()
    # on a terminal each file's diff comes right before its question, as with `git add -p`
    per_file = asking and patch_dir is None and settings.output_format == "text"
    per_file = per_file and not plain_output()
    if patch_dir is not None:
        result = replace(result, errors=result.errors + tuple(write_patch_dir(result, patch_dir)))
    elif settings.output_format == "text" and not per_file:
        show_changes(result, plain_output())
    if settings.output_format == "text":  # the patch owns stdout; what is left goes to stderr
        with report_stream(settings, stdout_ok=False) as stream:
            emit_report(result, settings, stream, only=unfixed, project_table=True)
    elif settings.output_format != "json":  # before writing: notebook lines are read from disk
        with report_stream(settings, stdout_ok=True) as stream:
            emit_report(result, settings, stream)
    show = change_shower(result) if per_file else None
    roots = project_roots(result)
    written, write_errors, waited = write_changes(
        result.changes, yes, dry_run, show, roots, interactive=is_interactive()
    )
    result = replace(result, errors=result.errors + tuple(write_errors))
    fixed = fixed_findings(result, written)
    if settings.output_format == "json":  # after writing: it says which findings were fixed
        with report_stream(settings, stdout_ok=True) as stream:
            emit_report(result, settings, stream, fixed=fixed)
    unwritten = len(result.changes) - len(written) if not dry_run else 0
    finish(settings, result, started + waited, len(written), unwritten)
    if wants_project_table(settings, result, patch_dir):
        render_project_table(result, fixed, wrote=bool(written) or not result.changes)
    pending = len(result.changes) - len(written)
    sys.exit(exit_code(settings, result, findings_left=bool(unfixed or pending)))


class CodesInHelp(click.Command):
    """`explain`, whose help ends with the known codes: the rules (and the analysis under them)
    are imported only when that help is shown, not by every run that imports the command line."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import inspect  # click has imported it already

        from amp_clipfix.rules import RULES

        own = self.help
        self.help = f"{inspect.cleandoc(own or '')}\n\nCODE is one of {', '.join(sorted(RULES))}."
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = own


@main.command(cls=CodesInHelp)
@click.argument("code")
def explain(code: str) -> None:
    """Print the rule page of CODE: what it detects, why Lightning fails, an example before and
    after, and the safety of each fix."""
    from amp_clipfix.rules import RULES, render_rule

    rule = RULES.get(code.upper())
    if rule is None:
        raise click.BadParameter(
            f"unknown code {code!r}; known codes: {', '.join(RULES)}", param_hint="CODE"
        )
    click.echo(render_rule(rule))


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
