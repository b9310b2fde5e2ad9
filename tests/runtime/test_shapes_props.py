"""Issue 37's descriptor and decorator shapes train right after `apply` (fixtures/runtime_shapes/
props_<case>/, kept out of fixtures/runtime/ so the shared runtime modules do not pick them up).

Each program runs fp16 with a real GradScaler on the CPU and a large `init_scale` and imports
`gradmeter.py` (tests/runtime/gradmeter.py, copied next to it), as the silent-clipping cases do:

- `props_optim_kwargs_property`: a fused AdamW whose keyword arguments come from an `@property`
  of the module, clipped by the Trainer: as written Lightning raises (ACF002, the loud error);
- `props_decorated_training_step`: manual optimization whose backward, clip and step are the
  wrapper of a decorator factory in another module, applied to `training_step`: as written the
  clip bounds the scaled gradients (ACF005, manual backward).

`check` must report the rule, `apply --yes` must fix it, and the fixed program must step with
every applied gradient norm within 1% of min(true norm, max_norm), with an overflow skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import test_silent_clipping as silent
from cases import ROOT

CASES_DIR = ROOT / "fixtures" / "runtime_shapes"
CASES = sorted(path for path in CASES_DIR.glob("props_*") if (path / "case.json").is_file())


def test_the_cases_are_there() -> None:
    assert [case.name for case in CASES] == [
        "props_decorated_training_step",
        "props_optim_kwargs_property",
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_found_fixed_and_trains_right(case: Path, tmp_path: Path) -> None:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    before, after = tmp_path / "before", tmp_path / "after"
    for project in (before, after):
        shutil.copytree(case / "project", project)
        shutil.copy(silent.METER, project / silent.METER.name)
    written = silent.program(sys.executable, spec["entry"], cwd=before)
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    tool = [sys.executable, "-m", "amp_clipfix"]
    code, out, err = silent.finish(silent.run([*tool, "check", str(after)], tmp_path, env))
    assert code == 1, f"check found nothing:\n{out}\n{err}"
    assert f" {spec['hazard']} " in out and "review:" not in out, out
    code, out, err = silent.finish(silent.run([*tool, "apply", "--yes", str(after)], tmp_path, env))
    assert code == 0, f"apply failed:\n{out}\n{err}"
    fixed = silent.program(sys.executable, spec["entry"], cwd=after)

    code, out, err = silent.ran(written)
    if "error" in spec:
        assert code != 0 and spec["error"] in err, f"expected {spec['error']!r}:\n{err[-3000:]}"
    else:
        assert code == 0, err[-3000:]
        assert silent.wrong_steps(silent.measured(out)), "as written, every step was right"

    code, out, err = silent.ran(fixed)
    assert code == 0, f"the fixed program failed:\n{err[-3000:]}"
    report = silent.measured(out)
    assert report["steps"], "no optimizer step was taken"
    assert not silent.wrong_steps(report), json.dumps(report["steps"][:5])
    assert report["skipped"] >= 1, "no overflow step: init_scale too small to prove anything"
    assert any(step["true"] > report["max_norm"] for step in report["steps"]), "never clipped"
