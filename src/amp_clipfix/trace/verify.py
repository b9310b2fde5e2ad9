"""`trace --verify`: run the command again (after the fix) and show, per clipped step, the norm
the step got against min(true norm, max_norm), the overflow steps the scaler skipped, and any
loud error the run still raises. The proof goes to stderr, one line each; it passes when no
error is left and every finite step got its bound within 1%."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from amp_clipfix.reporting import echo
from amp_clipfix.trace.findings import Record, Run, error_code, first_frame, number, observed
from amp_clipfix.trace.launch import run_traced

TOLERANCE = 0.01


@dataclass(frozen=True)
class Step:
    """One clip's numbers: what the step got and what it should have got."""

    where: str
    applied: float
    meant: float
    true: float
    bound: float

    @property
    def right(self) -> bool:
        return abs(self.applied - self.meant) <= TOLERANCE * max(self.meant, 1e-12)


def measured(clip: Record) -> Step | None:
    """The clip's step in unscaled terms; None for an overflow step or a clip by value."""
    bound, total, after = clip.get("bound"), clip.get("total_norm"), clip.get("norm_after")
    if bound is None or total is None or after is None:
        return None
    if not all(math.isfinite(value) for value in (total, after)):
        return None
    scale = 1.0
    views = clip.get("scalers") if "scalers" in clip else [clip.get("scaler_state")]
    for view in views or []:
        if view and view.get("stage") == "READY":
            scale = float(view.get("scale", 1.0))
    frame = first_frame(clip)
    where = f"{frame[0].rsplit('/', 1)[-1]}:{frame[1]}" if frame else "?"
    true = total / scale
    return Step(where, after / scale, min(true, bound), true, bound)


def verdict(run: Run) -> tuple[list[str], bool]:
    """The proof's lines and whether the run passes."""
    lines: list[str] = []
    passed = True
    for error in run.events("error"):
        if error_code(str(error.get("message", ""))) is not None:
            lines.append(f"verify: still raises {error.get('type')}: {error.get('message')}")
            passed = False
    steps = [step for clip in clips(run) if (step := measured(clip)) is not None]
    for number_, step in enumerate(steps, start=1):
        mark = "ok" if step.right else "WRONG"
        lines.append(
            f"verify: clip {number_} at {step.where}: applied norm {number(step.applied)}, "
            f"min(true norm {number(step.true)}, max_norm {number(step.bound)}) = "
            f"{number(step.meant)}: {mark}"
        )
        passed = passed and step.right
    left = [finding.code for finding in observed(run)]
    if left:
        lines.append(f"verify: the run still shows {', '.join(sorted(set(left)))}")
        passed = False
    skipped = run.skipped_steps()
    total = len(run.events("step"))
    lines.append(
        f"verify: {'passed' if passed else 'FAILED'}: {total} optimizer steps, {skipped} skipped "
        f"on overflow, {len(steps)} clipped steps measured"
    )
    return lines, passed


def clips(run: Run) -> list[Record]:
    return sorted(
        [*run.events("clip"), *run.events("module_clip"), *run.events("fabric_clip")],
        key=run.records.index,
    )


def verify_run(command: Sequence[str], steps: int, overflow: bool, quiet: bool) -> bool:
    """Run the command again with the norms measured; print the proof; whether it passed."""
    echo("verify: running the command again with the fix", err=True)
    try:
        traced = run_traced(list(command), None, steps, overflow=overflow, norms=True)
    except OSError as error:
        echo(f"verify: cannot run {command[0]!r}: {error.strerror or error}", err=True)
        return False
    lines, passed = verdict(Run(traced.records))
    for line in lines:
        echo(line, err=True)
    return passed
