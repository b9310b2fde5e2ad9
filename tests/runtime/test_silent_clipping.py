"""Silent clipping hazards train wrong as written and right after `apply` (fixtures/runtime/<case>/
with `"hazard"` in case.json).

These programs raise nothing: the hazard is in the numbers. Each imports `gradmeter.py` (copied
in next to it), which measures, for every optimizer step the GradScaler does not skip, the norm
of the gradients the optimizer uses and the true (unscaled, unclipped) norm of that step. The
programs run fp16 with a real GradScaler on the CPU and a large `init_scale`, so the first steps
overflow and are skipped and the scale stays above 1 afterwards. As written, some step's applied
norm is off; after `amp-clipfix apply --yes` every step's applied norm is within 1% of
min(true norm, max_norm), at least one step was skipped for an overflow and every stepped scale
is above 1. A case with `"error"` must instead fail as written with that error; `"strategy"`
names the `--strategy` of `apply` (`auto` when absent).

A case whose case.json has `"runtime": ["lightning==2.0.9.post0", ...]` runs with the python of
that release's nox environment (`nox -t releases`, noxfile.py); its project pins that release
(requirements.txt) for amp-clipfix to read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest
from cases import ROOT, CaseBase, case_specs
from programs import PROGRAMS, Proc

METER = Path(__file__).resolve().parent / "gradmeter.py"
PREFIX = "amp-clipfix gradmeter: "
TOLERANCE = 0.01
TIMEOUT = 300


@dataclass(frozen=True)
class Case(CaseBase):
    hazard: str
    error: str | None
    strategy: str  # the `--strategy` of `apply`


def load_cases() -> list[Case]:
    return [
        Case(
            **common,
            hazard=data["hazard"],
            error=data.get("error"),
            strategy=data.get("strategy", "auto"),
        )
        for common, data in case_specs("hazard")
    ]


def program(python: str, entry: str, cwd: Path) -> Future[Proc]:
    """`python ENTRY` in `cwd`, started now and forked from a server that imported torch and
    Lightning already (programs.py)."""
    return PROGRAMS.start(python, [entry], cwd, {})


def ran(started: Future[Proc]) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of a program `program` started."""
    done = started.result(timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """amp-clipfix in a process of its own, started now."""
    child_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", **(env or {}))
    return subprocess.Popen(
        args, cwd=cwd, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=TIMEOUT)
    return process.returncode, out, err


def measured(out: str) -> dict:
    lines = [line for line in out.splitlines() if line.startswith(PREFIX)]
    assert lines, f"the program printed no measurement:\n{out[-2000:]}"
    return json.loads(lines[-1].removeprefix(PREFIX))


def wrong_steps(report: dict) -> list[dict]:
    """The steps whose applied norm is not min(true, max_norm) within 1%."""
    return [
        step
        for step in report["steps"]
        if abs(step["applied"] - min(step["true"], report["max_norm"]))
        > TOLERANCE * min(step["true"], report["max_norm"])
    ]


@pytest.mark.parametrize("case", load_cases(), ids=str)
def test_trains_wrong_as_written_and_right_after_apply(
    case: Case, tmp_path: Path, require_release: Callable[[tuple[str, ...]], None]
) -> None:
    require_release(case.runtime)
    before, after = tmp_path / "before", tmp_path / "after"
    for project in (before, after):
        shutil.copytree(case.project, project)
        shutil.copy(METER, project / METER.name)
    written = program(case.python, case.entry, cwd=before)
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    code, out, err = finish(
        run(
            [sys.executable, "-m", "amp_clipfix", "apply", "--yes"]
            + ["--strategy", case.strategy, str(after)],
            tmp_path,
            env,
        )
    )
    assert code == 0, f"apply failed:\n{out}\n{err}"
    assert f" {case.hazard} " in out + err, f"no {case.hazard} finding:\n{out}\n{err}"
    fixed = program(case.python, case.entry, cwd=after)
    wrong_then_right(written, fixed, case.error)


def wrong_then_right(written: Future[Proc], fixed: Future[Proc], error: str | None) -> None:
    """As written the program fails with `error` (or, without one, some step's applied norm is
    off); fixed it trains right at every step, with an overflow step skipped and a clip."""
    code, out, err = ran(written)
    if error is not None:
        assert code != 0 and error in err, f"expected {error!r}:\n{err[-3000:]}"
    else:
        assert code == 0, err[-3000:]
        assert wrong_steps(measured(out)), "as written, every step was already right"

    code, out, err = ran(fixed)
    assert code == 0, f"the fixed program failed:\n{err[-3000:]}"
    report = measured(out)
    assert report["steps"], "no optimizer step was taken"
    assert not wrong_steps(report), json.dumps(report["steps"][:5])
    assert report["skipped"] >= 1, "no overflow step: init_scale too small to prove anything"
    assert all(step["scale"] > 1 for step in report["steps"])
    assert any(step["true"] > report["max_norm"] for step in report["steps"]), "never clipped"
