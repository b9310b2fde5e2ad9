"""Issue 37, configuration shapes, on real Lightning: a module that optimizes manually, trained
through LightningCLI whose configuration sets the clip value (a default YAML config's
`trainer.gradient_clip_val`, or `trainer_defaults={"gradient_clip_val": ...}`). As written
Lightning refuses to start (MisconfigurationException, ACF009); after `apply` the clip runs in
the module's `on_before_optimizer_step` and the configured value is null: the program trains,
fp16 with a real GradScaler on the CPU, and every step that reaches the optimizer is clipped to
the configured norm (measured by gradmeter.py), overflow steps skipped.

The programs are fixtures/shapes_runtime/configs_*/project (jsonargparse is needed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import test_silent_clipping as silent
from cases import ROOT

pytestmark = pytest.mark.runtime

PROJECTS = ROOT / "fixtures" / "shapes_runtime"
CASES = sorted(path.name for path in PROJECTS.glob("configs_*"))
ERROR = "Automatic gradient clipping is not supported for manual optimization"


def test_there_are_config_shapes() -> None:
    assert CASES == ["configs_cli_trainer_defaults_manual_clip", "configs_cli_yaml_manual_clip"]


@pytest.mark.parametrize("name", CASES)
def test_refused_as_written_and_clipped_after_apply(name: str, tmp_path: Path) -> None:
    assert importlib.util.find_spec("jsonargparse"), "LightningCLI needs jsonargparse installed"
    before, after = tmp_path / "before", tmp_path / "after"
    for project in (before, after):
        shutil.copytree(PROJECTS / name / "project", project)
        shutil.copy(silent.METER, project / silent.METER.name)
    written = silent.program(sys.executable, "train.py", cwd=before)
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    code, out, err = silent.finish(
        silent.run(
            [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "--no-cache", str(after)],
            tmp_path,
            env,
        )
    )
    assert code == 0, f"apply failed:\n{out}\n{err}"
    assert " ACF009 " in out + err, f"no ACF009 finding:\n{out}\n{err}"
    fixed = silent.program(sys.executable, "train.py", cwd=after)

    code, out, err = silent.ran(written)
    assert code != 0 and ERROR in err, f"expected {ERROR!r}:\n{err[-3000:]}"

    code, out, err = silent.ran(fixed)
    assert code == 0, f"the fixed program failed:\n{err[-3000:]}"
    report = silent.measured(out)
    assert report["steps"], "no optimizer step was taken"
    assert not silent.wrong_steps(report), json.dumps(report["steps"][:5])
    assert report["skipped"] >= 1, "no overflow step: init_scale too small to prove anything"
    assert any(step["true"] > report["max_norm"] for step in report["steps"]), "never clipped"
