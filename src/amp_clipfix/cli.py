"""The command line: `amp-clipfix check`, `apply`, `explain` and `schema` (DESIGN.md §3, §6).

Exit codes: 0 nothing (left) to fix, 1 findings remain or changes are pending, 2 usage or file
errors, 130 interrupted (Ctrl-C); `--exit-zero` turns 1 into 0. Piped, `apply` prints a plain
patch on stdout and everything else on stderr.

This module is click's: the options, their help and their errors. What a command does once its
options are known is running.py's, which the quick reader of common command lines (quick.py)
calls too, without importing click.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click

from amp_clipfix import __version__, run_notes, running
from amp_clipfix.models import Strategy
from amp_clipfix.options import FORMATS, STDIN, Settings, UsageProblem, settings_from
from amp_clipfix.output.report import problem_line
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.pipeline import run
from amp_clipfix.records import replace
from amp_clipfix.reporting import OutputFileError, set_color
from amp_clipfix.strategies import DOES, auto_description, safety_label
from amp_clipfix.trace.command import trace
from amp_clipfix.writing import is_interactive, plain_output, write_changes


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


class OneLineUsageError(click.ClickException):
    """A usage error in one line (`error: ...` on stderr, `path: error: ...` when a file is
    concerned, like the run's other errors), exit 2, as ruff reports a bad `--select`."""

    exit_code = 2

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where

    def show(self, file: IO[str] | None = None) -> None:
        line = problem_line("error", self.format_message(), self.where)
        click.echo(terminal_safe(line), err=True)


def command_settings(options: dict[str, object], **more: object) -> Settings:
    """The options merged over the configuration; a bad one is click's usage error."""
    set_color(str(options.pop("color", None) or "auto"))
    try:
        return settings_from(**options, **more)  # type: ignore[arg-type]
    except UsageProblem as problem:
        if problem.one_line:
            raise OneLineUsageError(problem.message, problem.where) from None
        if problem.param_hint is not None:
            raise click.BadParameter(problem.message, param_hint=problem.param_hint) from None
        raise click.UsageError(problem.message) from None


@contextlib.contextmanager
def file_errors() -> Iterator[None]:
    """A report file or patch folder that cannot be written: one error line, exit 2."""
    try:
        yield
    except OutputFileError as error:
        error.show()
        sys.exit(running.EXIT_ERROR)


def common_options(function):  # noqa: ANN001, ANN201
    """Options shared by `check` and `apply`."""
    decorators = [
        # readable=False: a path that cannot be read is the run's `path: error: cannot read`,
        # the same line as for a file met in a folder, not click's usage error
        click.argument(
            "paths",
            nargs=-1,
            type=click.Path(path_type=Path, readable=False),
            metavar="[PATHS]...",
        ),
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
            "--output-format",
            "--format",
            "output_format",
            type=click.Choice(FORMATS),
            default="text",
            show_default=True,
            help="Report format: text for people, json (schema: `amp-clipfix schema`), sarif "
            "(code scanning), github (workflow annotations), rdjson (reviewdog, with "
            "suggestions) or gitlab (code quality report). `--format` is the same option.",
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="CODES",
            help="Report these codes or prefixes too, on top of `select` (comma-separated, "
            "repeatable; added to `extend-select` of the configuration).",
        ),
        click.option(
            "--per-file-ignores",
            multiple=True,
            metavar="GLOB:CODES",
            help="Never report CODES in files matching GLOB (relative to the configuration's "
            "folder; a GLOB without `/` matches a file's name anywhere). Repeatable; replaces "
            "`per-file-ignores` of the configuration.",
        ),
        click.option(
            "--config",
            multiple=True,
            metavar="PATH | KEY=VALUE",
            help="A configuration file for every project (a pyproject.toml, whose "
            "[tool.amp-clipfix] is read, or an amp-clipfix.toml with the keys at its top "
            'level), or a `KEY = VALUE` override in TOML (e.g. `strategy = "unfuse"`) that '
            "wins over every file. Repeatable.",
        ),
        click.option(
            "--color",
            type=click.Choice(["auto", "always", "never"]),
            default="auto",
            show_default=True,
            help="Colour in diffs and tables: auto (on a terminal without NO_COLOR), always "
            "(also piped: the diff is then no plain patch) or never (a plain patch on a "
            "terminal too).",
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
            type=click.Path(path_type=Path, readable=False),
            help="Read the code from stdin (with no PATHS, or PATH `-`) and report it under "
            "this name, whose project's configuration applies.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


class InterruptibleGroup(click.Group):
    """Ctrl-C anywhere in a command (analysis, the prompt) ends it with exit 130 and one line
    on stderr (running.interrupted), instead of click's "Aborted!" and exit 1."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            running.interrupted(interrupt)


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
    amp-clipfix check --diff src/       the same patch, as ruff's --diff (exit 1 if pending)
    amp-clipfix rule ACF001             what a finding means and how each fix behaves
    """
    running.never_fail_to_encode()
    run_notes.few_garbage_collections()


@main.command()
@common_options
@click.option(
    "--fix",
    is_flag=True,
    help="Write the safe fixes without asking, as `apply --yes` (no diff shown; the findings "
    "left are reported). An unsafe --strategy needs --unsafe-fixes.",
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="With --fix or --diff: allow an unsafe --strategy (bf16, guard) named on the "
    "command line or in the configuration.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Write nothing; print the fixes as a patch on stdout (as `apply --dry-run`). Exit 1 "
    "when changes are pending, 0 when there are none.",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Instead of the findings, one line per code: count, code, [*] when all are fixable, "
    "rule name (a JSON list with --output-format json).",
)
@click.option(
    "--show-fixes",
    is_flag=True,
    help="List the findings fixed (with --fix) or that a fix would fix (otherwise), per "
    "file and code.",
)
@click.option(
    "--show-files",
    is_flag=True,
    help="Print the files a check would read (one per line, after excludes) and exit 0.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Write `# noqa: ACFxxx` on the line of each finding (merged into a noqa comment "
    "there), so the next check is clean; exit 0.",
)
def check(
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    statistics: bool,
    show_fixes: bool,
    show_files: bool,
    add_noqa: bool,
    **options: object,
) -> None:
    """Report findings in PATHS (files or folders; default: the current folder; `-`: stdin).

    A file brings in the whole project it belongs to (a Trainer in another file still links),
    and only findings with a site in a given file are reported. Exit 0 when clean, 1 when there
    are findings (0 with --exit-zero), 2 on usage or file errors.
    """
    started = time.perf_counter()
    if add_noqa and (fix or diff):
        raise OneLineUsageError("--add-noqa cannot be combined with --fix or --diff")
    safe_only = (fix or diff) and not unsafe_fixes
    settings = command_settings(options, safe_only=safe_only)
    settings = replace(settings, statistics=statistics, show_fixes=show_fixes)
    if add_noqa and settings.paths == (STDIN,):
        raise OneLineUsageError("--add-noqa writes files: it cannot take the code from stdin")
    with file_errors():
        if show_files:
            running.show_files(settings)
        if add_noqa:
            running.add_noqa(settings, walk=run)
        if fix or diff:
            running.apply(
                settings,
                started,
                yes=not diff,
                dry_run=diff,
                patch_dir=None,
                interactive=False,
                plain=plain_output(),
                walk=run,
                write=write_changes,
                as_check=True,
            )
        running.check(settings, started, walk=run)


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
    settings = command_settings(options)
    with file_errors():
        running.apply(
            settings,
            started,
            yes,
            dry_run,
            patch_dir,
            interactive=is_interactive(),
            plain=plain_output(),
            walk=run,
            write=write_changes,
        )


class CodesInHelp(click.Command):
    """`rule`, whose help ends with the known codes: the rules (and the analysis under them)
    are imported only when that help is shown, not by every run that imports the command line."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import inspect  # click has imported it already

        from amp_clipfix.rules import RULES

        own = self.help
        names = ", ".join(f"{code} ({rule.name})" for code, rule in sorted(RULES.items()))
        self.help = f"{inspect.cleandoc(own or '')}\n\nRULE is one of {names}."
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = own


RULE_FORMAT = click.option(
    "--output-format",
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: the rule page (markdown); json: an object per rule (a list with --all).",
)


@main.command(cls=CodesInHelp)
@click.argument("rule_name", metavar="RULE", required=False)
@click.option("--all", "every", is_flag=True, help="Every rule, in code order.")
@RULE_FORMAT
def rule(rule_name: str | None, every: bool, output_format: str) -> None:
    """Print the page of RULE (a code such as ACF001 or a name such as
    fabric-clip-fused-fp16): what it detects, why Lightning fails, an example before and after,
    and the safety of each fix; `--all` prints every rule."""
    from amp_clipfix.output.rule_pages import rule_json, rule_named, rule_text
    from amp_clipfix.rules import RULES

    if every == (rule_name is not None):
        raise OneLineUsageError("give one RULE (a code or a name) or --all")
    if every:
        chosen = [RULES[code] for code in sorted(RULES)]
    else:
        found = rule_named(str(rule_name))
        if found is None:
            known = ", ".join(sorted(RULES))
            what = "code" if str(rule_name)[-1:].isdigit() else "rule"
            raise OneLineUsageError(f"unknown {what} {rule_name!r} (known codes: {known})")
        chosen = [found]
    if output_format == "json":
        import json

        data = [rule_json(one) for one in chosen]
        click.echo(json.dumps(data if every else data[0], indent=2, ensure_ascii=False))
        return
    click.echo("\n".join(rule_text(one) for one in chosen))


@main.command(cls=CodesInHelp, name="explain")
@click.argument("code", metavar="RULE")
@RULE_FORMAT
@click.pass_context
def explain(ctx: click.Context, code: str, output_format: str) -> None:
    """The same as `rule RULE` (kept for older scripts)."""
    ctx.invoke(rule, rule_name=code, every=False, output_format=output_format)


@main.command()
@click.option(
    "--config",
    "of_config",
    is_flag=True,
    help="The schema of [tool.amp-clipfix] instead (for editors and check-jsonschema).",
)
def schema(of_config: bool) -> None:
    """Print the JSON Schema of `--format json` (draft 7), or of the configuration."""
    from importlib import resources  # only this command reads package data

    name = "project/config_schema.json" if of_config else "output/schema.json"
    text = resources.files("amp_clipfix").joinpath(name).read_text("utf-8")
    click.echo(text, nl=not text.endswith("\n"))


main.add_command(trace)  # `amp-clipfix trace -- COMMAND...` (trace/command.py)
