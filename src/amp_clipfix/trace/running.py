"""`trace`'s run once its options are known: run the command with the monitor, turn the records
into findings, report them as `check` does (formats, exit codes), and with --apply / --dry-run
fix them (trace/fixing.py), with --verify run the command again (trace/verify.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from amp_clipfix.options import UsageProblem, settings_from
from amp_clipfix.reporting import echo, emit_report, finish, report_stream
from amp_clipfix.results import RunResult
from amp_clipfix.running import EXIT_ERROR, exit_code
from amp_clipfix.trace.findings import Run, observed, summary_lines
from amp_clipfix.trace.launch import TraceRun, run_traced


def trace_run(
    command: Sequence[str],
    steps: int,
    overflow: bool,
    norms: bool,
    record: Path | None,
    output_format: str,
    apply_fixes: bool,
    yes: bool,
    dry_run: bool,
    verify: bool,
    exit_zero: bool,
    quiet: bool,
) -> NoReturn:
    started = time.perf_counter()
    command = list(command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        fail("trace: no COMMAND given (amp-clipfix trace -- python train.py)")
    try:
        settings = settings_from(
            paths=(),
            strategy=None,
            lightning_version=None,
            exclude=(),
            output_format=output_format,
            jobs=1,
            stdin_filename=None,
            quiet=quiet,
            exit_zero=exit_zero,
        )
    except UsageProblem as problem:
        fail(f"error: {problem.message}")
    traced = traced_or_fail(command, record, steps, overflow, norms)
    run = Run(traced.records)
    findings = observed(run)
    if not quiet:
        for line in summary_lines(run, traced.returncode):
            echo(line, err=True)
    if apply_fixes or dry_run:
        from amp_clipfix.trace.fixing import fix_observed

        code = fix_observed(findings, run, settings, started, yes=yes, dry_run=dry_run)
        if verify and not dry_run and code != EXIT_ERROR:
            from amp_clipfix.trace.verify import verify_run

            if not verify_run(command, steps, overflow, quiet) and not exit_zero:
                code = max(code, 1)
        sys.exit(code)
    files = {str(site.path) for finding in findings for site in finding.sites}
    result = RunResult(tuple(findings), (), (), files_seen=len(files), files_parsed=0, projects=1)
    with report_stream(settings, stdout_ok=True) as stream:
        emit_report(result, settings, stream)
    finish(settings, result, started)
    code = exit_code(settings, result, findings_left=bool(findings))
    if verify:
        from amp_clipfix.trace.verify import verify_run

        if not verify_run(command, steps, overflow, quiet) and not exit_zero:
            code = max(code, 1)
    sys.exit(code)


def traced_or_fail(
    command: list[str], record: Path | None, steps: int, overflow: bool, norms: bool
) -> TraceRun:
    """The monitored run; exit 2 with one line when it cannot start or shows no Python."""
    try:
        traced = run_traced(command, record, steps, overflow=overflow, norms=norms)
    except OSError as error:
        fail(f"error: cannot run {command[0]!r}: {error.strerror or error}")
    if not traced.records:
        fail(
            f"error: the monitor saw no Python process in {command[0]!r} (exit "
            f"{traced.returncode}); trace runs Python programs started by an interpreter that "
            "reads PYTHONPATH"
        )
    for item in traced.records:
        if item["event"] == "monitor_error":
            echo(
                f"warning: the monitor could not wrap {item.get('module')}: {item.get('message')}",
                err=True,
            )
    return traced


def fail(message: str) -> NoReturn:
    echo(message, err=True)
    sys.exit(EXIT_ERROR)
