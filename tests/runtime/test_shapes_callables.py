"""Callables as values, proven at run time (fixtures/shapes_runtime/callables_<case>/): programs
whose clip is reached through a GradScaler wrapped in a project class from another module, a clip
helper imported from another module, a `functools.partial` of `fabric.clip_gradients`, or a
helper object given a module's bound `self.manual_backward` (manual optimization, a Trainer).

Each runs fp16 with a real GradScaler on the CPU and a large `init_scale` (the first steps
overflow and are skipped), measured by `gradmeter.py` as in test_silent_clipping.py: as written it
trains wrong (some step's applied norm is not min(true norm, max_norm)) or fails with the case's
`"error"`; `amp-clipfix apply --yes` reports the case's `"hazard"` and the fixed program trains
right at every step, with at least one overflow step skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from cases import ROOT
from test_silent_clipping import METER, finish, program, run, wrong_then_right

CASES = sorted((ROOT / "fixtures" / "shapes_runtime").glob("callables_*/case.json"))


@pytest.mark.parametrize("spec", CASES, ids=lambda path: path.parent.name)
def test_callables_shape_trains_wrong_as_written_and_right_after_apply(
    spec: Path, tmp_path: Path
) -> None:
    case = json.loads(spec.read_text(encoding="utf-8"))
    before, after = tmp_path / "before", tmp_path / "after"
    for project in (before, after):
        shutil.copytree(spec.parent / "project", project)
        shutil.copy(METER, project / METER.name)
    written = program(sys.executable, case["entry"], cwd=before)
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    code, out, err = finish(
        run([sys.executable, "-m", "amp_clipfix", "apply", "--yes", str(after)], tmp_path, env)
    )
    assert code == 0, f"apply failed:\n{out}\n{err}"
    assert f" {case['hazard']} " in out + err, f"no {case['hazard']} finding:\n{out}\n{err}"
    assert any(
        (after / p.relative_to(spec.parent / "project")).read_bytes() != p.read_bytes()
        for p in (spec.parent / "project").rglob("*.py")
    ), "apply changed nothing"
    fixed = program(sys.executable, case["entry"], cwd=after)
    wrong_then_right(written, fixed, case.get("error"))
