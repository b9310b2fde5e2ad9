"""What a run reports: the findings in the chosen format, the warnings and errors, the summary
line, and on a terminal (or with -v) the summary and per-project tables on stderr."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from amp_clipfix import run_notes
from amp_clipfix.kinds import Strategy, active_findings
from amp_clipfix.options import Settings
from amp_clipfix.output.report import (
    assumption_lines,
    error_where,
    format_findings,
    plural,
    problem_line,
    project_rows,
)
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.paths import display_path
from amp_clipfix.patterns import lazy
from amp_clipfix.pipeline import RunResult
from amp_clipfix.project.torch_release import DEFAULT_TORCH, INSTALLED_SOURCE
from amp_clipfix.project.version import Target
from amp_clipfix.settings import suppression_warnings

if TYPE_CHECKING:  # rich and the machine formats are imported when output needs them
    from rich.console import Console

    from amp_clipfix.models import Finding
    from amp_clipfix.output.machine import Summary


class OutputFileError(Exception):
    """The report's file (or the patch folder) cannot be written; the command line shows it as
    one error line and exits 2 (`show`). Whatever was there before is kept."""

    def __init__(self, filename: str, hint: str) -> None:
        super().__init__(filename, hint)
        self.filename, self.hint = filename, hint

    def show(self) -> None:
        shown = display_path(Path(self.filename))
        echo(terminal_safe(problem_line("error", " ".join(self.hint.split()), shown)), err=True)


ANSI_STYLE = lazy(r"\033\[[0-?]*[ -/]*[@-~]")  # click's `strip_ansi`


def echo(
    message: str = "", file: IO[str] | None = None, nl: bool = True, err: bool = False
) -> None:
    """click.echo of text without importing click: the line, flushed, with ANSI styles removed
    when the stream is no terminal. Under the click command line (click imported) it is
    click.echo itself, which also mends a stream whose encoding is ASCII; the quick path
    (quick.py) runs only when neither stream's is."""
    click = sys.modules.get("click")
    if click is not None:
        click.echo(message, file=file, nl=nl, err=err)
        return
    stream = file if file is not None else sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = f"{message}\n" if nl else message
    if not out:
        stream.flush()
        return
    try:
        terminal = stream.isatty()
    except Exception:  # noqa: BLE001 - as click's `isatty`: a stream that cannot tell is none
        terminal = False
    if not terminal and "\033" in out:  # every style starts with ESC
        out = ANSI_STYLE.sub("", out)
    stream.write(out)
    stream.flush()


COLOR = ["auto"]  # --color: auto, always or never (the command line sets it per run)


def set_color(when: str) -> None:
    COLOR[0] = when


def colored_console(stderr: bool = False) -> Console:
    """A rich Console for --color: always forces colour (a terminal's escapes) even piped,
    never switches it off; auto leaves it to rich (a terminal, NO_COLOR)."""
    from rich.console import Console

    when = COLOR[0]
    return Console(
        stderr=stderr,
        force_terminal=True if when == "always" else None,
        no_color=True if when == "never" else None,
    )


def stderr_console() -> Console:
    return _stderr_console(COLOR[0])


@functools.cache
def _stderr_console(when: str) -> Console:
    return colored_console(stderr=True)


@functools.cache
def _plain_stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def stderr_is_terminal() -> bool:
    """Whether stderr gets the progress bar and the summary table, as rich decides it (--color
    decides colour only, not this). rich is imported only when the answer can be yes (a
    terminal, or a variable that forces one): a piped run (CI, pre-commit) never pays for it."""
    forced = os.environ.get("TTY_COMPATIBLE") or os.environ.get("FORCE_COLOR")
    if not forced and not is_tty(sys.stderr):
        return False
    return _plain_stderr_console().is_terminal


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed (a test runner's capture)
        return False


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
    run_notes.refuse()  # the time taken is no answer a later run may print again
    render_summary(stderr_console(), stats)


@contextlib.contextmanager
def report_stream(settings: Settings, stdout_ok: bool) -> Iterator[IO[str]]:
    """Where the report goes: --output-file, else stdout (or stderr when stdout carries code
    or a patch). The file gets the whole report or keeps what it held (write_output_file)."""
    if settings.output_file is None:
        yield sys.stdout if stdout_ok else sys.stderr
        return
    import io

    from amp_clipfix.output.write import WriteError, write_output_file

    stream = io.StringIO(newline="\n")
    yield stream
    try:
        write_output_file(settings.output_file, stream.getvalue().encode("utf-8"))
    except WriteError as error:
        raise OutputFileError(str(settings.output_file), str(error)) from None


def emit_report(
    result: RunResult,
    settings: Settings,
    stream: IO[str],
    only: Sequence | None = None,
    fixed: frozenset[Finding] = frozenset(),
    project_table: bool = False,
    after_writing: bool = False,
) -> None:
    """The findings in the chosen format, on `stream` (`after_writing`: `fixed` were
    written; the summary says how many). Several projects: the release each
    assumed, one line each (apply's per-project table lists them instead)."""
    from amp_clipfix.output.machine import Summary

    summary = Summary.from_findings(
        result.findings,
        files_seen=result.files_seen,
        lightning_version=lightning_label(result),
        strategy=run_strategy(result, settings) or Strategy.AUTO.value,
        errors=len(result.errors),
        projects=project_targets(result),
    )
    if settings.output_format != "text":  # the machine formats (and json) only when asked
        from amp_clipfix.output.formats import to_github, to_gitlab, to_json, to_rdjson, to_sarif
    machine = {
        "json": lambda: to_json(result.findings, summary, result.edits, result.errors, fixed),
        "sarif": lambda: to_sarif(result.findings, summary, result.edits, result.errors),
        "rdjson": lambda: to_rdjson(result.findings, result.edits),
        "gitlab": lambda: to_gitlab(result.findings),
    }
    if settings.statistics and settings.output_format in ("text", "json"):
        emit_statistics(result, settings, stream)
        return
    if settings.output_format in machine:
        echo(machine[settings.output_format](), nl=False, file=stream)
        return
    if settings.output_format == "github":
        echo(to_github(result.findings), nl=False, file=stream)
        stream = sys.stderr
    else:
        for line in format_findings(active_findings(result.findings) if only is None else only):
            echo(line, file=stream)
    if settings.show_fixes:
        for line in fixes_listing(result, fixed, after_writing):
            echo(line, file=stream)
    if settings.verbosity >= 0:
        if len(result.targets) > 1 and not project_table:
            for line in assumption_lines(result.targets):
                echo(line, file=stream)
        written = len(fixed) if after_writing else None
        echo(summary_line(result, summary, settings, project_table, written), file=stream)


def emit_statistics(result: RunResult, settings: Settings, stream: IO[str]) -> None:
    """`--statistics`, as ruff prints it: per code its count, `[*]` when every finding of it
    has a fix, and the rule's name; with --output-format json a list of objects."""
    from amp_clipfix.rules import RULES

    rows: dict[str, list[int]] = {}
    for finding in active_findings(result.findings):
        counts = rows.setdefault(finding.code, [0, 0])
        counts[0] += 1
        counts[1] += finding.fix is not None
    ordered = sorted(rows.items(), key=lambda item: (-item[1][0], item[0]))
    names = {code: RULES[code].name if code in RULES else "" for code in rows}
    if settings.output_format == "json":
        import json

        data = [
            {"code": code, "name": names[code], "count": count, "fixable": fixable == count}
            for code, (count, fixable) in ordered
        ]
        echo(json.dumps(data, indent=2), file=stream)
        return
    width = max((len(str(count)) for count, _ in rows.values()), default=1)
    for code, (count, fixable) in ordered:
        mark = "[*] " if fixable == count else "[ ] " if fixable else ""
        echo(f"{count:>{width}}\t{code}\t{mark}{names[code]}", file=stream)


def fixes_listing(result: RunResult, fixed: frozenset[Finding], after_writing: bool) -> list[str]:
    """`--show-fixes`: the findings fixed (after writing) or that a fix would fix, per file
    (the finding's own) and code, as ruff lists them."""
    from amp_clipfix.rules import RULES

    if after_writing:
        listed, verb = list(fixed), "Fixed"
    else:
        listed = [f for f in active_findings(result.findings) if f.fix is not None]
        verb = "Would fix"
    if not listed:
        return [f"{verb} 0 findings."]
    per_file: dict[str, dict[str, int]] = {}
    for finding in listed:
        codes = per_file.setdefault(display_path(finding.primary.path), {})
        codes[finding.code] = codes.get(finding.code, 0) + 1
    lines = [f"{verb} {plural(len(listed), 'finding')}:"]
    for path in sorted(per_file):
        lines.append(terminal_safe(f"- {path}:"))
        for code, count in sorted(per_file[path].items()):
            name = RULES[code].name if code in RULES else ""
            lines.append(f"    {count} \u00d7 {code} ({name})")
    return lines


def run_strategy(result: RunResult, settings: Settings) -> str | None:
    """The strategy every project used (the command line's, or the configurations' when they
    agree); None when projects' configurations chose different ones."""
    used = {project.strategy for project in result.per_project} or {settings.strategy}
    return used.pop().value if len(used) == 1 else None


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
    result: RunResult,
    summary: Summary,
    settings: Settings,
    project_table: bool = False,
    written: int | None = None,
) -> str:
    findings = active_findings(result.findings)
    strategy = run_strategy(result, settings)
    fixable_with = f"--strategy {strategy}" if strategy else "each project's strategy"
    with_findings = len({finding.primary.path for finding in findings})
    checked = f"{plural(result.files_seen, 'file')} checked"
    where = f"in {plural(with_findings, 'file')} ({checked})" if findings else f"in {checked}"
    parts = [
        f"{plural(len(findings), 'finding')} ({summary.fixable} fixable with {fixable_with}) "
        + where
    ]
    if summary.suppressed:
        parts.append(f"{summary.suppressed} suppressed")
    if written is not None:
        parts.append(f"{written} fixed, {len(findings) - written} remaining")
    elif result.changes:
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
    """`, torch 2.3.1 from requirements.txt` when a pin or --torch-version set the torch, `,
    torch 2.13.0: no pin found (...)` when it is only assumed (the torch installed next to
    amp-clipfix goes unsaid)."""
    torch = target.torch
    quiet = torch == DEFAULT_TORCH or (torch.source == INSTALLED_SOURCE and not torch.assumed)
    return "" if quiet else f", {torch.describe()}"


def report_errors(result: RunResult, settings: Settings) -> None:
    """Warnings (unknown codes in suppression comments, untracked files, excluded or empty
    paths), then errors: one line each, on stderr."""
    warnings = list(settings.configurer.warnings)
    warnings.extend(suppression_warnings(result.findings))
    warnings.extend(result.notes)
    for warning in dict.fromkeys(warnings):
        echo(terminal_safe(f"warning: {warning}"), err=True)
    for error in result.errors:
        echo(terminal_safe(problem_line("error", error.message, error_where(error))), err=True)


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
