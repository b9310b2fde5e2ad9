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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from amp_clipfix import __version__, observed, replay
from amp_clipfix.models import ErrorKind, FileError, Finding, Strategy, active_findings
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
from amp_clipfix.project.discover import Project, exclusion, find_project_root
from amp_clipfix.project.torch_release import DEFAULT_TORCH, TorchTarget, parse_torch_version
from amp_clipfix.project.version import Target, parse_version
from amp_clipfix.settings import (
    CommandLine,
    ProjectConfigurer,
    Scope,
    Selection,
    code_error,
    config_code_error,
    partial_scope,
    project_keep,
    split_codes,
    suppression_warnings,
)
from amp_clipfix.strategies import DOES, auto_description, safety_label

if TYPE_CHECKING:  # rich and the machine formats are imported when output needs them
    from rich.console import Console

    from amp_clipfix.output.formats import Summary

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif", "github", "rdjson", "gitlab")
MACHINE_FORMATS = ("json", "sarif", "rdjson", "gitlab")
STDIN = Path("-")


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


class OneLineUsageError(click.ClickException):
    """A usage error in one line (`error: ...` on stderr, like the run's other errors), exit 2,
    as ruff reports a bad `--select`."""

    exit_code = 2

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(terminal_safe(f"error: {self.format_message()}"), err=True)


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
    try:  # the first PATH's configuration is checked before anything runs; others per project
        config = load_config(start if observed.exists(start) else Path("."))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    try:
        target = requested_target(lightning_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--lightning-version") from None
    try:
        torch = requested_torch(torch_version)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--torch-version") from None
    command_line = CommandLine(
        strategy=strategy,
        lightning_version=lightning_version,
        select=split_codes(select) if select else None,
        ignore=split_codes(ignore),
        scope=Scope(targets) if targets == (STDIN,) else partial_scope(targets),
        tracked_only=tracked_only,
        exclude=tuple(exclude),
    )
    problem = (
        code_error("--select", command_line.select, selects=True)
        or code_error("--ignore", command_line.ignore)
        or config_code_error(config)
    )
    if problem is not None:
        raise OneLineUsageError(problem)
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

    replay.refuse()  # a progress bar is drawn as time passes: never replayed
    with ProgressBar(stderr_console()) as progress:
        return walk(targets, options, excludes, progress)


def finish(
    settings: Settings,
    result: RunResult,
    started: float,
    files_fixed: int = 0,
    files_unwritten: int = 0,
) -> None:
    """The warnings and errors, then the summary table on a terminal (or with -v). `started`
    is moved on by the time spent waiting at the prompt: the wall time is the tool's own."""
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
        files_unwritten=files_unwritten,
        errors=len(result.errors),
        seconds=time.perf_counter() - started,
    )
    replay.refuse()  # the time taken is no answer a later run may print again
    render_summary(stderr_console(), stats)


def read_stdin(settings: Settings) -> bytes | None:
    return sys.stdin.buffer.read() if settings.paths == (STDIN,) else None


def few_garbage_collections() -> None:
    """The syntax trees of a run are millions of objects that live to its end and hold no
    cycles; with the default thresholds the collector walks them again and again (half the
    time of a 5 MB module). A short-lived command collects seldom instead."""
    gc.set_threshold(100_000, 50, 1_000)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells and git report for Ctrl-C


class Interrupted(KeyboardInterrupt):
    """Ctrl-C that came while files were being written: those already written are named."""

    def __init__(self, written: int) -> None:
        super().__init__()
        self.written = written


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
        replay.allow()  # all it printed follows from what it read, unless refused above
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
        show_changes(result)
    if settings.output_format == "text":  # the patch owns stdout; what is left goes to stderr
        with report_stream(settings, stdout_ok=False) as stream:
            emit_report(result, settings, stream, only=unfixed, project_table=True)
    elif settings.output_format != "json":  # before writing: notebook lines are read from disk
        with report_stream(settings, stdout_ok=True) as stream:
            emit_report(result, settings, stream)
    show = change_shower(result) if per_file else None
    roots = project_roots(result)
    written, write_errors, waited = write_changes(result.changes, yes, dry_run, show, roots)
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
        strategy=run_strategy(result, settings) or Strategy.AUTO.value,
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


def requested_target(lightning_version: str | None) -> Target | None:
    """The release asked for on the command line; None leaves it to each project's
    configuration or pins. Raises ValueError for a malformed version."""
    if lightning_version:
        return Target.exact(parse_version(lightning_version), "--lightning-version")
    return None


def run_strategy(result: RunResult, settings: Settings) -> str | None:
    """The strategy every project used (the command line's, or the configurations' when they
    agree); None when projects' configurations chose different ones."""
    used = {project.strategy for project in result.per_project} or {settings.strategy}
    return used.pop().value if len(used) == 1 else None


def requested_torch(torch_version: str | None) -> TorchTarget | None:
    """The torch asked for on the command line; None leaves it to each project's pins."""
    if not torch_version:
        return None
    return TorchTarget.exact(parse_torch_version(torch_version), "--torch-version")


def lightning_label(result: RunResult) -> str:
    """The release (or range) assumed, as JSON's `lightning_version`; several joined by ", "."""
    return ", ".join(sorted({target.version_label for _, target in result.targets}))


def project_targets(result: RunResult) -> list[dict[str, object]]:
    """Per project: its root, the Lightning it assumed and its strategy, for JSON and SARIF."""
    strategies = {project.root: project.strategy.value for project in result.per_project}
    rows: list[dict[str, object]] = []
    for root, target in sorted(result.targets, key=lambda pair: str(pair[0])):
        row: dict[str, object] = {"root": display_path(root), **target_json(target)}
        if root in strategies:
            row["strategy"] = strategies[root]
        rows.append(row)
    return rows


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
    strategy = run_strategy(result, settings)
    fixable_with = f"--strategy {strategy}" if strategy else "each project's strategy"
    parts = [
        f"{plural(len(findings), 'finding')} ({summary.fixable} fixable with {fixable_with}) "
        f"in {plural(result.files_seen, 'file')}"
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
    """Warnings (unknown codes in suppression comments, untracked files, excluded or empty
    paths), then errors: one line each, on stderr."""
    warnings = list(settings.configurer.warnings)
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
        from amp_clipfix.output.patches import patch_with_base

        out = sys.stdout.buffer
        patch = patch_with_base(changes, project_roots(result))
        if is_tty(sys.stdout):  # NO_COLOR on a terminal: file text never reaches it raw
            patch = terminal_safe(patch.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "backslashreplace"
            )
        out.write(patch)
        out.flush()
        return
    show = change_shower(result)
    for change in changes:
        show(change)


def change_shower(result: RunResult) -> Callable[[FileChange], None]:
    """Renders one file's diff with rich on stdout, with what its fixes change."""
    from rich.console import Console

    from amp_clipfix.output.diff import diff_hunks
    from amp_clipfix.output.diff_view import render_file_diff

    console = Console()

    def show(change: FileChange) -> None:
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

    return show


def write_patch_dir(result: RunResult, folder: Path) -> list[FileError]:
    """One `<project>.patch` per project with changes, paths relative to the project's root;
    a patch that cannot be written (its name is a link, say) is an error line, the others are
    still written."""
    from amp_clipfix.output.patches import patch_of, project_patch_names
    from amp_clipfix.output.write import WriteError, write_own_file

    projects = [project for project in result.per_project if project.changes]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.FileError(str(folder), error.strerror or str(error)) from None
    errors = []
    for name, project in zip(project_patch_names([p.root for p in projects]), projects):
        target = folder / name
        try:
            write_own_file(target, b"".join(patch_of(c, project.root) for c in project.changes))
        except WriteError as error:
            errors.append(FileError(target, str(error), ErrorKind.WRITE))
            continue
        click.echo(
            terminal_safe(f"wrote {display_path(target)} ({display_path(project.root)})"),
            err=True,
        )
    return errors


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
    from rich.text import Text

    if not result.per_project:
        return
    utf = (getattr(sys.stderr, "encoding", "") or "").lower().replace("-", "") == "utf8"
    table = Table(
        title="amp-clipfix per project", title_justify="left", box=None if not utf else box.SIMPLE
    )
    columns = (
        "project",
        "Lightning",
        "from",
        "torch",
        "findings",
        "by rule",
        "fixed",
        "left for review",
        "errors",
    )
    for column in columns:
        text = column in ("project", "from", "by rule")
        table.add_column(
            column,
            justify="left" if text else "right",
            overflow="fold",  # never cut a path short
            min_width=24 if column == "from" else None,
        )
    rows = project_rows(result.per_project, fixed, wrote)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # text, never markup: `[tool.x]` stays
    stderr = stderr_console()
    natural = stderr.measure(table, options=stderr.options.update_width(10_000)).maximum
    # a log (not a terminal) takes the table at its natural width, one row per project
    console = Console(stderr=True, width=None if stderr.is_terminal else max(natural, 120))
    if natural > console.width:
        # too narrow for the columns to stay readable: one block of lines per project
        table = Table(title="amp-clipfix per project", title_justify="left", box=None)
        table.add_column("", overflow="fold")
        table.add_column("", justify="right", overflow="fold")
        table.show_header = False
        for row in rows:
            table.add_row(Text(terminal_safe(row[0])), "", style="bold")
            for column, value in zip(columns[1:], row[1:]):
                table.add_row(f"  {column}", Text(value))
    console.print(table)


def is_interactive() -> bool:
    """Someone can answer the prompt: stdin and stderr (where the prompt goes) are terminals."""
    return is_tty(sys.stdin) and is_tty(sys.stderr)


PROMPT_HELP = """\
y - write this file
n - do not write this file
a - write this file and all the remaining ones
q - quit; do not write this file or any of the remaining ones
? - print help"""
ANSWERS = {"y": "y", "yes": "y", "n": "n", "no": "n", "a": "a", "all": "a", "q": "q", "quit": "q"}


@dataclass
class PromptState:
    open: bool = False  # a question is on the screen, its line not ended yet


PROMPT = PromptState()


def ask(question: str) -> str:
    """One answer among `ANSWERS` (end of input is `q`); anything else prints the help and
    asks again."""
    while True:
        PROMPT.open = True  # before the question shows: Ctrl-C may come at any moment
        click.echo(question, nl=False, err=True)
        line = sys.stdin.readline()
        PROMPT.open = False
        if not line:  # end of input (Ctrl-D): quit
            click.echo(err=True)
            return "q"
        answer = ANSWERS.get(line.strip().lower())
        if answer is not None:
            return answer
        click.echo(PROMPT_HELP, err=True)


def choose_changes(
    changes: Sequence[FileChange], show: Callable[[FileChange], None] | None
) -> tuple[list[FileChange], float]:
    """Per file, like `git add -p`: y, n, a (this and the rest), q (nothing more), ? (help).
    The helper module is not asked about: it is written when a file that imports from it is.
    Returns the changes to write and the seconds spent waiting for answers."""
    required = {path for change in changes for path in change.requires}
    asked = [change for change in changes if change.source.path not in required]
    chosen: list[FileChange] = []
    waited = 0.0
    for number, change in enumerate(asked, start=1):
        if show is not None:
            show(change)
        path = terminal_safe(display_path(change.source.path))
        began = time.perf_counter()
        answer = ask(f"({number}/{len(asked)}) Write {path}? [y,n,a,q,?] ")
        waited += time.perf_counter() - began
        if answer in ("y", "a"):
            chosen.append(change)
        if answer == "a":
            chosen.extend(asked[number:])
        if answer in ("a", "q"):
            break
    return with_helper_modules(changes, chosen), waited


def with_helper_modules(
    changes: Sequence[FileChange], chosen: Sequence[FileChange]
) -> list[FileChange]:
    """The chosen changes, after the helper modules they import from (written first)."""
    needed = {path for change in chosen for path in change.requires}
    helpers = [change for change in changes if change.source.path in needed]
    return [*helpers, *(change for change in chosen if change.source.path not in needed)]


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Ctrl-C while files are written is taken after the write under way (no file is left
    half done; each write is atomic anyway); the list holds the signal when one came."""
    import signal
    import threading

    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def write_changes(
    changes: Sequence[FileChange],
    yes: bool,
    dry_run: bool,
    show: Callable[[FileChange], None] | None = None,
    roots: dict[Path, Path] | None = None,
) -> tuple[list[FileChange], list[FileError], float]:
    """Write (or not); the changes written, the writes that failed, and the seconds spent
    waiting at the prompt. `roots`: each changed file's project root, which no write may leave."""
    if not changes:
        return [], [], 0.0
    if dry_run:
        click.echo("Dry run: nothing written.", err=True)
        return [], [], 0.0
    chosen, waited = list(changes), 0.0
    if not yes:
        if not is_interactive():
            click.echo(
                "Not a terminal and no --yes: nothing written (use --yes to write, --dry-run "
                "to only show).",
                err=True,
            )
            return [], [], 0.0
        chosen, waited = choose_changes(changes, show)
        if not chosen:
            click.echo("Nothing written.", err=True)
            return [], [], waited
    from amp_clipfix.output.write import write_all

    with interrupts_deferred() as caught:
        # failures are reported with the run's other errors (and in JSON/SARIF) by `finish`
        written, failed = write_all(chosen, roots, stop=lambda: bool(caught))
    if caught:
        raise Interrupted(len(written))
    click.echo(f"Fixed {plural(len(written), 'file')}.", err=True)
    left = [change for change in changes if change not in written]
    if left:
        names = ", ".join(terminal_safe(display_path(c.source.path)) for c in left)
        click.echo(
            f"Left unwritten, fixes not applied: {plural(len(left), 'file')} ({names}).",
            err=True,
        )
    return written, failed, waited
