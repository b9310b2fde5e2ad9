"""Fixes that compose train right (fixtures/runtime/<case>/ with `"compose"` in case.json; issue
36): two clips of one optimizer in one fp16 step, a bf16 rewrite that leaves no scaler behind,
and an `apply` whose fixes took two rounds.

Each program imports `groupmeter.py` (copied in next to it), which keeps, for every optimizer
step taken, the norm of each parameter group's gradients as the optimizer uses them. As written
the program fails with the case's `"error"`, or trains with some group's norm off (clipped while
still scaled). After `amp-clipfix apply --yes --strategy <strategy>` it trains, `check` finds
nothing, every group's norm is at most max_norm (within 1%) and some step was clipped; with a
GradScaler (`"scaler": true`, a CPU fp16 GradScaler with a large `init_scale`) at least one step
was skipped for an overflow and every step taken had a scale above 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from cases import ROOT, CaseBase, case_specs
from programs import PROGRAMS

METER = Path(__file__).resolve().parent / "groupmeter.py"
PREFIX = "amp-clipfix groupmeter: "
TOLERANCE = 0.01
TIMEOUT = 300


@dataclass(frozen=True)
class Case(CaseBase):
    code: str  # the finding `apply` fixes
    strategy: str
    error: str | None
    scaler: bool


def load_cases() -> list[Case]:
    return [
        Case(
            **common,
            code=data["compose"],
            strategy=data.get("strategy", "auto"),
            error=data.get("error"),
            scaler=data.get("scaler", False),
        )
        for common, data in case_specs("compose")
    ]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = dict(
        os.environ,
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
    )
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def tool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "amp_clipfix", *args], cwd)


def measured(out: str) -> dict:
    lines = [line for line in out.splitlines() if line.startswith(PREFIX)]
    assert lines, f"the program printed no measurement:\n{out[-2000:]}"
    return json.loads(lines[-1].removeprefix(PREFIX))


@pytest.mark.runtime
@pytest.mark.parametrize("case", load_cases(), ids=str)
def test_trains_right_after_the_fixes_compose(case: Case, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(case.project, project)
    shutil.copy(METER, project / METER.name)

    written = PROGRAMS.run(case.python, [case.entry], project, {})
    if case.error is not None:
        assert written.returncode != 0 and case.error in written.stderr, written.stderr[-3000:]
    else:
        assert written.returncode == 0, written.stderr[-3000:]
        report = measured(written.stdout)
        norms = [norm for step in report["steps"] for norm in step["groups"]]
        assert min(norms) < (1 - TOLERANCE) * report["max_norm"], "as written it was right"

    applied = tool("apply", "--yes", "--strategy", case.strategy, ".", cwd=project)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f" {case.code} " in applied.stdout + applied.stderr
    checked = tool("check", "--no-cache", ".", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    fixed = PROGRAMS.run(case.python, [case.entry], project, {})
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    report = measured(fixed.stdout)
    limit = report["max_norm"]
    norms = [norm for step in report["steps"] for norm in step["groups"]]
    assert norms, "no optimizer step was taken"
    assert max(norms) <= (1 + TOLERANCE) * limit, report["steps"][:5]
    assert any(norm >= (1 - TOLERANCE) * limit for norm in norms), "never clipped"
    if case.scaler:
        assert report["iterations"] - len(report["steps"]) >= 1, "no overflow step was skipped"
        assert all(step["scale"] > 1 for step in report["steps"])
