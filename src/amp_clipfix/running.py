"""The runs of `check` and `apply` once their options are known: the pipeline, the report, the
writing and the exit code. No click here: the command line (cli.py) and the quick reader of
common command lines (quick.py) both call these, so both behave the same by construction.

What tests replace on cli.py (the pipeline's `run`, `write_changes`, whether the terminal is
interactive or the output plain) is passed in by the caller rather than looked up here."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

from amp_clipfix import observed, run_notes
from amp_clipfix.analysis.project_collect import is_lasting
from amp_clipfix.kinds import ErrorKind, FileError, active_findings
from amp_clipfix.options import EDIT_FORMATS, STDIN, Settings
from amp_clipfix.output.report import plural, problem_line
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.paths import display_path, excerpt
from amp_clipfix.pipeline import Options, RunResult, run, run_source
from amp_clipfix.project.discover import Project, exclusion, find_project_root
from amp_clipfix.records import replace
from amp_clipfix.reporting import (
    echo,
    emit_report,
    finish,
    render_project_table,
    report_errors,
    report_stream,
    stderr_console,
    stderr_is_terminal,
    wants_project_table,
)
from amp_clipfix.settings import Selection, project_keep
from amp_clipfix.sources.python import ignore_compile_warnings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells and git report for Ctrl-C

Walk = Callable[..., RunResult]  # pipeline.run, or what a test puts in its place


def execute(
    settings: Settings, fix: bool, stdin_data: bytes | None = None, walk_with: Walk = run
) -> RunResult:
    """Run the pipeline on the paths, or on `stdin_data` when the path is `-`, without the
    garbage collector: the run's syntax trees, summaries and values live to its end and hold
    few cycles, and each collection walked the new ones again (10-20% of the CPU of a search
    over the Lightning repository or of a 5 MB module, for up to 8% more memory). It collects
    again once the run is over where the process goes on (a test runs many in one process).
    What Python's compiler says about the user's code is not printed
    (sources.python.ignore_compile_warnings), for the run only."""
    import warnings

    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            ignore_compile_warnings()
            return execute_run(settings, fix, stdin_data, walk_with)
    finally:
        # The first collection after the run walks every object it made (millions on a large
        # tree: 2 s of CPU on NeMo's); the process that is the command ends right after this
        # command without collecting (replay._end_now), so it leaves them to its end.
        if collecting and not run_notes.is_the_command():
            gc.enable()


def execute_run(
    settings: Settings, fix: bool, stdin_data: bytes | None, walk_with: Walk
) -> RunResult:
    """execute's run. The base options hold the command line only; each project's
    configuration is merged by `settings.configurer`."""
    line = settings.command_line
    options = Options(
        strategy=settings.strategy,
        target=settings.target,
        torch=settings.torch,
        fix=fix,
        with_edits=settings.output_format in EDIT_FORMATS,  # no fix is worked out for others
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
    unreadable = named_file_errors(settings.paths)
    bad = {error.path for error in unreadable}
    targets = tuple(target for target in line.scope.targets if target not in bad)
    excludes = settings.configurer.excludes
    walk = functools.partial(
        walk_with,
        force_exclude=settings.force_exclude,
        implied=line.scope.implied,
        tracked_only=line.tracked_only,
    )
    if settings.verbosity < 0 or not stderr_is_terminal():
        result = walk(targets, options, excludes)
    else:
        from amp_clipfix.output.terminal import ProgressBar

        with ProgressBar(stderr_console(), on_start=run_notes.refuse) as progress:
            # a progress bar drawn as time passes is never replayed (on_start)
            result = walk(targets, options, excludes, progress)
    # the walk reads a named file again when its project's root is walked: one line per file
    told = {os.path.abspath(error.path) for error in result.errors if error.path is not None}
    untold = tuple(e for e in unreadable if os.path.abspath(e.path or "") not in told)
    return replace(result, errors=untold + result.errors) if untold else result


KINDS = (".py", ".pyi", ".ipynb", ".yaml", ".yml")


def named_file_errors(paths: tuple[Path, ...]) -> list[FileError]:
    """A file named on the command line that cannot be read as its kind is an error, not "0
    findings": one that cannot be decoded (a `.py` that is not UTF-8 and has no coding
    cookie), or one of another suffix (which is read as Python, as ruff reads a named file)
    that does not parse as Python. Pin files (requirements.txt, pyproject.toml, lock files)
    name their project and are read as such."""
    from amp_clipfix.project.pins import is_pin_file
    from amp_clipfix.sources.text import SourceError, decode_source

    errors = []
    for path in paths:
        if path == STDIN or not observed.is_file(path) or is_pin_file(path):
            continue
        try:
            data = observed.read_bytes(path)
        except OSError:
            continue  # the run's own read says "cannot read", as for a file in a folder
        try:
            source = decode_source(path, data)
        except SourceError as error:
            errors.append(FileError(path, str(error), ErrorKind.READ))
            continue
        if path.suffix in KINDS:
            continue
        try:
            compile(source.text, str(path), "exec", flags=1024, dont_inherit=True)  # ast only
        except (SyntaxError, ValueError) as error:
            reason = getattr(error, "msg", None) or str(error)
            message = (
                "not a Python file, notebook or YAML config (read as Python, as a named file "
                f"is: {reason})"
            )
            errors.append(FileError(path, message, ErrorKind.READ))
    return errors


def read_stdin(settings: Settings) -> bytes | None:
    return sys.stdin.buffer.read() if settings.paths == (STDIN,) else None


def never_fail_to_encode() -> None:
    """A terminal whose encoding cannot show a character (`PYTHONIOENCODING=ascii`, a legacy
    code page) gets an escape instead of a UnicodeEncodeError traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def interrupted(interrupt: KeyboardInterrupt) -> NoReturn:
    """Ctrl-C anywhere in a command (analysis, the prompt) ends it with exit 130 and one line
    on stderr, instead of click's "Aborted!" and exit 1, the code of "findings remain"."""
    from amp_clipfix.writing import PROMPT, Interrupted, prompt_stream

    if PROMPT.open:  # the question's line is still open: end it first
        echo(err=prompt_stream())
    written = interrupt.written if isinstance(interrupt, Interrupted) else 0
    what = (
        "nothing written"
        if not written
        else f"{plural(written, 'file')} written before it, nothing more"
    )
    echo(f"amp-clipfix: interrupted (Ctrl-C): {what}.", err=True)
    sys.exit(EXIT_INTERRUPTED)


@contextlib.contextmanager
def one_line_on_failure(stage: str, where: str) -> Iterator[None]:
    """A stage of the whole run that fails (a bug of ours the stages' own guards did not
    keep to one file) ends the command with one error line naming `where` and exit 2, never a
    traceback and exit 1 (the code of "findings"). What the command line itself handles
    (a report file that cannot be opened, a closed pipe, end of input) passes through."""
    from amp_clipfix.reporting import OutputFileError

    try:
        yield
    except (OutputFileError, EOFError, BrokenPipeError):
        raise
    except Exception as failure:  # noqa: BLE001 - one line, exit 2
        message = excerpt(f"internal error in {stage}: {failure!r}", 300, quoted=False)
        echo(terminal_safe(problem_line("error", message, where)), err=True)
        sys.exit(EXIT_ERROR)


def named_paths(settings: Settings) -> str:
    """The paths a run was given, as an error line names them."""
    if settings.paths == (STDIN,):
        return display_path(settings.stdin_filename or Path("stdin.py"))
    return ", ".join(display_path(path) for path in settings.paths)


def report_name(settings: Settings, stdout_ok: bool) -> str:
    """Where the report goes (reporting.report_stream), as an error line names it."""
    if settings.output_file is not None:
        return display_path(settings.output_file)
    return "<stdout>" if stdout_ok else "<stderr>"


def check(settings: Settings, started: float, walk: Walk = run) -> NoReturn:
    """`check`'s run: the report, then exit 0, 1 or 2."""
    stdin_data = read_stdin(settings)
    with one_line_on_failure("the analysis", named_paths(settings)):
        result = execute(settings, fix=False, stdin_data=stdin_data, walk_with=walk)
    with (
        report_stream(settings, stdout_ok=True) as stream,
        one_line_on_failure("the report", report_name(settings, True)),
    ):
        emit_report(result, settings, stream)
    finish(settings, result, started)
    noted = settings.output_file is None and stdin_data is None
    if settings.cache and noted:  # all it printed follows from what it read, unless refused
        run_notes.allow(lasting_errors=all(map(is_lasting, result.errors)))
    sys.exit(exit_code(settings, result, findings_left=bool(active_findings(result.findings))))


def apply(
    settings: Settings,
    started: float,
    yes: bool,
    dry_run: bool,
    patch_dir: Path | None,
    *,
    interactive: bool,
    plain: bool,
    walk: Walk = run,
    write: Callable[..., tuple[list, list[FileError], float]] | None = None,
    as_check: bool = False,
) -> NoReturn:
    """`apply`'s run: the patch (or the diffs and questions on a terminal), the report, the
    writes, then exit 0, 1 or 2. `interactive`: someone can answer a prompt; `plain`: diffs
    are a plain patch. `as_check`: `check --fix` (no diff; the findings left are reported on
    stdout after writing, as ruff's) or `check --diff`."""
    from amp_clipfix.writing import (  # apply's own: a check never writes
        change_shower,
        fixed_findings,
        project_roots,
        show_changes,
        write_changes,
        write_patch_dir,
    )

    write = write or write_changes
    stdin_data = read_stdin(settings)
    with one_line_on_failure("the analysis", named_paths(settings)):
        result = execute(settings, fix=True, stdin_data=stdin_data, walk_with=walk)
        result = diffable(result)
    unfixed = [finding for finding in active_findings(result.findings) if not finding.resolved]
    if stdin_data is not None:
        with (
            report_stream(settings, stdout_ok=False) as stream,
            one_line_on_failure("the report", report_name(settings, False)),
        ):
            emit_report(result, settings, stream)
        finish(settings, result, started)
        sys.stdout.buffer.write(result.changes[0].new_data if result.changes else stdin_data)
        sys.exit(exit_code(settings, result, findings_left=bool(unfixed)))
    asking = bool(result.changes) and not yes and not dry_run and interactive
    # on a terminal each file's diff comes right before its question, as with `git add -p`
    per_file = asking and patch_dir is None and settings.output_format == "text"
    per_file = per_file and not plain
    fixing = as_check and not dry_run  # `check --fix`: no diff, the report after writing
    if patch_dir is not None:
        with one_line_on_failure("the patches", display_path(patch_dir)):
            patched = write_patch_dir(result, patch_dir)
        result = replace(result, errors=result.errors + tuple(patched))
    elif settings.output_format == "text" and not per_file and not fixing:
        with one_line_on_failure("the diff", "<stdout>"):
            show_changes(result, plain)
    if settings.output_format == "text" and not fixing:
        # the patch owns stdout; what is left goes to stderr
        with (
            report_stream(settings, stdout_ok=False) as stream,
            one_line_on_failure("the report", report_name(settings, False)),
        ):
            emit_report(result, settings, stream, only=unfixed, project_table=not as_check)
    elif settings.output_format not in ("json", "text"):  # before writing: notebook lines
        with (
            report_stream(settings, stdout_ok=True) as stream,
            one_line_on_failure("the report", report_name(settings, True)),
        ):
            emit_report(result, settings, stream)
    show = change_shower(result) if per_file else None
    roots = project_roots(result)
    with one_line_on_failure("writing", named_paths(settings)):
        written, write_errors, waited = write(
            result.changes, yes, dry_run, show, roots, interactive=interactive
        )
    result = replace(result, errors=result.errors + tuple(write_errors))
    fixed = fixed_findings(result, written)
    if settings.output_format == "json":  # after writing: it says which findings were fixed
        with (
            report_stream(settings, stdout_ok=True) as stream,
            one_line_on_failure("the report", report_name(settings, True)),
        ):
            emit_report(result, settings, stream, fixed=fixed, after_writing=fixing)
    elif fixing:  # `check --fix`: what is left, on stdout, as `check` reports it
        left = [finding for finding in active_findings(result.findings) if finding not in fixed]
        with (
            report_stream(settings, stdout_ok=True) as stream,
            one_line_on_failure("the report", report_name(settings, True)),
        ):
            emit_report(result, settings, stream, only=left, fixed=fixed, after_writing=True)
    unwritten = len(result.changes) - len(written) if not dry_run else 0
    finish(settings, result, started + waited, len(written), unwritten)
    if wants_project_table(settings, result, patch_dir):
        render_project_table(result, fixed, wrote=bool(written) or not result.changes)
    pending = len(result.changes) - len(written)
    sys.exit(exit_code(settings, result, findings_left=bool(unfixed or pending)))


def diffable(result: RunResult) -> RunResult:
    """The changes whose diff can be made: one whose diff fails (a bug of ours) is neither
    shown nor written, and is one error line naming its file; the others go on."""
    from amp_clipfix.output.patches import patch_of

    kept, errors = [], []
    for change in result.changes:
        try:
            patch_of(change)
        except Exception as failure:  # noqa: BLE001 - one line, the other files go on
            message = excerpt(f"not fixed: internal error in the diff: {failure!r}", 300, False)
            errors.append(FileError(change.source.path, message, ErrorKind.INTERNAL))
            continue
        kept.append(change)
    if not errors:
        return result
    return replace(result, changes=tuple(kept), errors=result.errors + tuple(errors))


def show_files(settings: Settings) -> NoReturn:
    """`check --show-files`: the files a check reads, one per line (as ruff lists them), after
    excludes and --tracked-only; exit 0, or 2 when a path cannot be used."""
    from amp_clipfix.project.discover import discover

    line = settings.command_line
    discovery = discover(
        line.scope.targets,
        settings.configurer.excludes,
        settings.force_exclude,
        line.scope.implied,
        line.tracked_only,
    )
    options = Options(strategy=settings.strategy)
    errors = list(discovery.errors)
    files: list[Path] = []
    for project in discovery.projects:
        configured = settings.configurer(project, options)
        if isinstance(configured, FileError):
            errors.append(configured)
            continue
        files.extend(configured[0].files)
    for path in sorted({display_path(path) for path in files}):
        echo(path)
    result = RunResult((), (), tuple(errors), files_seen=len(files), files_parsed=0, projects=0)
    report_errors(result, settings)
    sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)


def add_noqa(settings: Settings, walk: Walk = run) -> NoReturn:
    """`check --add-noqa`: a noqa comment on the line of each finding; exit 0 (2 on errors),
    as ruff's."""
    from amp_clipfix.noqa_writer import add_noqa as write_comments

    result = execute(settings, fix=False, stdin_data=None, walk_with=walk)
    added, errors, notes = write_comments(active_findings(result.findings))
    errors_now = result.errors + tuple(errors)
    result = replace(result, errors=errors_now, notes=result.notes + tuple(notes))
    report_errors(result, settings)
    echo(f"Added {plural(added, 'noqa directive')}.", err=True)
    sys.exit(EXIT_ERROR if result.errors else EXIT_CLEAN)


def exit_code(settings: Settings, result: RunResult, findings_left: bool) -> int:
    """2 on errors; 1 when findings are left (or changes pending) unless --exit-zero; else 0."""
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings_left and not settings.exit_zero else EXIT_CLEAN
