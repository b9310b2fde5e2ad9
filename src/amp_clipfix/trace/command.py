"""`amp-clipfix trace [OPTIONS] -- COMMAND...`: the click command. cli.py adds it to the group;
what it does is in trace/running.py, imported when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_STEPS = 3


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=DEFAULT_STEPS,
    show_default=True,
    help="Stop the command after this many optimizer steps (a step the scaler skips counts).",
)
@click.option(
    "--overflow",
    is_flag=True,
    help="Force one fp16 overflow: the first scaler.update() sets a huge scale, so the next "
    "step overflows (the scaler skips it) and the update after it puts the scale back.",
)
@click.option(
    "--norms",
    is_flag=True,
    help="Also measure the gradients' norm after each clip (one more reduction per clip).",
)
@click.option(
    "--record",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Keep the trace (JSON lines, one record per event) in this file.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(("text", "json", "sarif", "github")),
    default="text",
    show_default=True,
    help="Report format, as `check`'s.",
)
@click.option("--apply", "apply_fixes", is_flag=True, help="Fix what the run showed.")
@click.option("--yes", "-y", is_flag=True, help="With --apply: write without asking.")
@click.option("--dry-run", is_flag=True, help="Show the fixes as a patch; never write.")
@click.option(
    "--verify",
    is_flag=True,
    help="After writing the fixes, run the command again and report what each step got.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--quiet", "-q", is_flag=True, help="No summary lines.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def trace(**options: object) -> None:
    """Run COMMAND (your training program: `python train.py`, `python -m pkg.train`, a
    LightningCLI entry point, `torchrun ...`) with a monitor, and report the hazards the run
    shows: the same codes and pages as `check`, confidence `observed`, with what the run
    measured (scale, max_norm, applied norm) and the lines of your code that did it.

    \b
    amp-clipfix trace -- python train.py --config cfg.yaml
    amp-clipfix trace --overflow --record run.jsonl -- python -m project.train
    amp-clipfix trace --apply --yes --verify -- python train.py

    Exit 0 when the run shows nothing (left) to fix, 1 when findings remain or changes are
    pending, 2 when the command cannot run or the monitor saw no Python process.
    """
    from amp_clipfix.trace.running import trace_run

    trace_run(**options)  # type: ignore[arg-type]
