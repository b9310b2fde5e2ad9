"""The common command lines without click: `check ...` and `apply --dry-run ...`.

Importing click (and the standard library it pulls in: inspect, typing, datetime, uuid, ...)
cost a small project's `check` about a fifth of its time. This reader takes the command lines
that CI, pre-commit and editors run, builds the same Settings as cli.py and calls the same run
(running.py), so the output is the same by construction. Whatever it does not fully understand
goes to the click command line unchanged, before anything is printed: no command or another
command (but `--version` alone), `--help`, an unknown or bunched option, a value click would refuse
(a choice, a count, a path it checks), an interactive `apply` (no `--dry-run`), `--patch-dir`,
shell completion, a bad option value or configuration (click words the error), a stream
whose encoding click would mend.

Standard library only until the command line is understood.
"""

from __future__ import annotations

import codecs
import os
import sys

# The options of `check` and `apply` (cli.py's common_options) as click spells them.
FLAGS = {
    "--force-exclude": "force_exclude",
    "--exit-zero": "exit_zero",
    "--tracked-only": "tracked_only",
    "--quiet": "quiet",
    "-q": "quiet",
    "--verbose": "verbose",
    "-v": "verbose",
    "--no-cache": "no_cache",
}
APPLY_FLAGS = {"--yes": "yes", "-y": "yes", "--dry-run": "dry_run"}
VALUES = {
    "--strategy": "strategy",
    "--lightning-version": "lightning_version",
    "--torch-version": "torch_version",
    "--format": "output_format",
    "--output-format": "output_format",
    "--output-file": "output_file",
    "-o": "output_file",
    "--jobs": "jobs",
    "-j": "jobs",
    "--stdin-filename": "stdin_filename",
}
REPEATED = {
    "--exclude": "exclude",
    "--select": "select",
    "--ignore": "ignore",
    "--extend-select": "extend_select",
    "--per-file-ignores": "per_file_ignores",
    "--config": "config",
}
SHORT_WITH_VALUE = ("-o", "-j")  # `-j2` and `-ofile` are left to click
NO_CACHE_VARIABLE = "AMP_CLIPFIX_NO_CACHE"


class NotUnderstood(Exception):
    """The command line is left to click."""


class Raw:
    """A command line as click's parser would leave it: strings, before any conversion."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.paths: list[str] = []
        self.flags: set[str] = set()
        self.values: dict[str, str] = {}  # the last one counts, as in click
        self.repeated: dict[str, list[str]] = {name: [] for name in REPEATED.values()}


def read(arguments: list[str]) -> Raw | None:
    """The command and its options, or None when click must read the command line."""
    try:
        return _read(arguments)
    except NotUnderstood:
        return None


def _read(arguments: list[str]) -> Raw:
    if not arguments or arguments[0] not in ("check", "apply"):
        raise NotUnderstood
    raw = Raw(arguments[0])
    flags = FLAGS if raw.command == "check" else {**FLAGS, **APPLY_FLAGS}
    rest = arguments[1:]
    index = 0
    while index < len(rest):
        argument = rest[index]
        index += 1
        if argument == "--":
            raw.paths.extend(rest[index:])
            break
        if argument == "-" or not argument.startswith("-"):
            raw.paths.append(argument)
            continue
        name, equals, attached = argument.partition("=")
        if not name.startswith("--") and equals:
            raise NotUnderstood  # `-o=x`: click reads the value as `=x`
        if name in flags and not equals:
            raw.flags.add(flags[name])
        elif name in VALUES or name in REPEATED:
            if equals:
                value = attached
            elif index < len(rest) and not rest[index].startswith("-"):
                value, index = rest[index], index + 1
            else:
                raise NotUnderstood  # no value, or one that looks like an option
            if name in REPEATED:
                raw.repeated[REPEATED[name]].append(value)
            else:
                raw.values[VALUES[name]] = value
        else:
            raise NotUnderstood  # --help, --version, --patch-dir, -qv, -j2, unknown
    if raw.command == "apply" and "dry_run" not in raw.flags:
        raise NotUnderstood  # may write, may ask: click's
    return raw


def _converted(raw: Raw) -> dict[str, object]:
    """The values click would pass to the command (cli.py's parameter types), or
    NotUnderstood where click would refuse one or check more than this does."""
    from pathlib import Path

    from amp_clipfix.kinds import Strategy
    from amp_clipfix.options import FORMATS

    strategy = raw.values.get("strategy")
    if strategy is not None and strategy not in {s.value for s in Strategy}:
        raise NotUnderstood
    output_format = raw.values.get("output_format", "text")
    if output_format not in FORMATS:
        raise NotUnderstood
    jobs = raw.values.get("jobs")
    if jobs is None:
        count = os.cpu_count() or 1
    elif jobs.isascii() and jobs.isdigit() and int(jobs) >= 1:
        count = int(jobs)
    else:
        raise NotUnderstood
    no_cache = "no_cache" in raw.flags
    if not no_cache and NO_CACHE_VARIABLE in os.environ:
        if os.environ[NO_CACHE_VARIABLE] != "1":
            raise NotUnderstood  # click's reading of other values is its own
        no_cache = True
    paths = tuple(Path(_path(value)) for value in raw.paths)
    output_file = raw.values.get("output_file")
    if output_file is not None and os.path.isdir(_path(output_file)):
        raise NotUnderstood  # click: "is a directory"
    stdin_filename = raw.values.get("stdin_filename")
    return {
        "paths": paths,
        "strategy": strategy,
        "lightning_version": raw.values.get("lightning_version"),
        "torch_version": raw.values.get("torch_version"),
        "exclude": tuple(raw.repeated["exclude"]),
        "force_exclude": "force_exclude" in raw.flags,
        "output_format": output_format,
        "select": tuple(raw.repeated["select"]),
        "ignore": tuple(raw.repeated["ignore"]),
        "extend_select": tuple(raw.repeated["extend_select"]),
        "per_file_ignores": tuple(raw.repeated["per_file_ignores"]),
        "config": tuple(raw.repeated["config"]),
        "exit_zero": "exit_zero" in raw.flags,
        "output_file": None if output_file is None else Path(output_file),
        "tracked_only": "tracked_only" in raw.flags,
        "jobs": count,
        "quiet": "quiet" in raw.flags,
        "verbose": "verbose" in raw.flags,
        "no_cache": no_cache,
        "stdin_filename": None if stdin_filename is None else Path(_path(stdin_filename)),
    }


def _path(value: str) -> str:
    """A path value click's `Path` type takes as it is (cli.py: `readable=False`, so a file
    that cannot be read is the run's own error line): an empty one click words an error for."""
    if not value:
        raise NotUnderstood
    return value


def _plain_streams() -> bool:
    """Text streams with an encoding click leaves alone (it rewraps an ASCII one)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None or not hasattr(stream, "buffer"):
            return False
        try:
            if codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii":
                return False
        except LookupError:
            return False
    return True


def _completion_asked() -> bool:
    """click's shell completion (`_AMP_CLIPFIX_COMPLETE=...`) is click's."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def main() -> None:
    """The command line: read here when understood, else by click (cli.py)."""
    if sys.argv[1:] == ["--version"] and _plain_streams() and not _completion_asked():
        from amp_clipfix import __version__

        # click.version_option's message, with cli.py's prog_name
        print(f"amp-clipfix, version {__version__}", flush=True)
        sys.exit(0)
    understood = read(sys.argv[1:]) if _plain_streams() and not _completion_asked() else None
    if understood is None or not _run(understood):
        from amp_clipfix.cli import main as click_main

        click_main()


def _run(raw: Raw) -> bool:
    """Run the command; False, before anything is printed, when click must take it."""
    import time

    from amp_clipfix import run_notes, running
    from amp_clipfix.options import UsageProblem, settings_from
    from amp_clipfix.reporting import OutputFileError

    running.never_fail_to_encode()  # what cli.py's group does before any command
    run_notes.few_garbage_collections()
    try:
        started = time.perf_counter()
        options = _converted(raw)
        try:
            settings = settings_from(**options)  # type: ignore[arg-type]
        except UsageProblem:
            return False  # click words the error, with its usage line
        if raw.command == "check":
            running.check(settings, started)
        from amp_clipfix.writing import is_interactive, plain_output

        running.apply(
            settings,
            started,
            "yes" in raw.flags,
            True,
            None,
            interactive=is_interactive(),
            plain=plain_output(),
        )
    except NotUnderstood:
        return False
    except KeyboardInterrupt as interrupt:
        running.interrupted(interrupt)
    except EOFError:
        _click_ending("eof")
    except OSError as error:
        import errno

        if error.errno != errno.EPIPE:
            raise
        _click_ending("pipe")
    except OutputFileError as error:
        error.show()
        sys.exit(running.EXIT_ERROR)
    return True


def _click_ending(kind: str) -> None:
    """End as click's main does after end of input or a closed pipe (rare: click is imported
    for it)."""
    import click
    import click.core

    if kind == "eof":
        click.echo(file=sys.stderr)
        click.echo("Aborted!", file=sys.stderr)
    else:
        wrapper = click.core._PacifyFlushWrapper  # noqa: SLF001 - click's own answer to EPIPE
        sys.stdout = wrapper(sys.stdout)
        sys.stderr = wrapper(sys.stderr)
    sys.exit(1)
