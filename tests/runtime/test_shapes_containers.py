"""Issue 37, containers: the loud error (ACF002) through `dataclasses.replace` and `asdict`.

`fixtures/runtime/shape_dataclasses_asdict_replace/` is a real program whose Trainer is built with
`L.Trainer(**asdict(cfg.trainer))` and whose optimizer is `AdamW(**asdict(cfg.optim))`, the fast
recipe `dataclasses.replace(base, fused=True)` of a config that is not fused by default; it
raises Lightning's RuntimeError. test_runtime_fix.py walks it with every runtime case: it fails
before, each safe fix (unfuse, unscale, auto) makes it train with clipped gradients and the
numbers of Lightning's own clipping. Here: `check` finds it as a certain ACF002 whose fused
piece is the `fused=True` of the `replace` call (the fix edits that literal), and the near miss,
the same program with the default fused and the recipe `replace(base, fused=False)`, trains
under real Lightning and gets no finding and no edit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from programs import EXPECT_CLIPPING, PROGRAMS

pytestmark = pytest.mark.runtime

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "fixtures" / "runtime" / "shape_dataclasses_asdict_replace" / "project"
FAST = "FAST = dataclasses.replace(BASE, optim=dataclasses.replace(BASE.optim, fused=True))"


def amp_clipfix(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "amp_clipfix", *args, "--no-cache", "."]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def near_miss(tmp_path: Path) -> Path:
    """The case with `fused` on by default and turned off by the recipe's `replace`."""
    project = tmp_path / "project"
    shutil.copytree(CASE, project)
    train = project / "train.py"
    text = train.read_text(encoding="utf-8")
    assert FAST in text and "    fused: bool = False\n" in text
    text = text.replace("    fused: bool = False\n", "    fused: bool = True\n")
    train.write_text(text.replace(FAST, FAST.replace("fused=True", "fused=False")), "utf-8")
    return project


def test_the_replace_literal_is_the_certain_fused_piece(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(CASE, project)
    line = next(
        number
        for number, text in enumerate((project / "train.py").read_text().splitlines(), 1)
        if text == FAST
    )
    checked = amp_clipfix("check", "--lightning-version", "2.6.6", cwd=project)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    findings = re.findall(r"^(train\.py:\d+:\d+: ACF\d+) ", checked.stdout, re.MULTILINE)
    assert findings == [f"train.py:{line}:78: ACF002"], checked.stdout
    assert "review:" not in checked.stdout
    assert "AdamW(**asdict(self.optim)) with fused=True" in checked.stdout
    diff = amp_clipfix(
        "apply", "--dry-run", "--strategy", "unfuse", "--lightning-version", "2.6.6", cwd=project
    )
    assert f"+{FAST.replace('fused=True', 'fused=False')}" in diff.stdout.splitlines(), diff.stdout


def test_the_near_miss_trains_and_gets_no_finding_and_no_edit(tmp_path: Path) -> None:
    project = near_miss(tmp_path)
    before = (project / "train.py").read_bytes()
    ran = PROGRAMS.run(sys.executable, ["train.py"], project, {EXPECT_CLIPPING: "1"})
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert "TRAINED OK" in ran.stdout
    checked = amp_clipfix("check", "--lightning-version", "2.6.6", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("0 findings"), checked.stdout
    applied = amp_clipfix("apply", "--yes", "--lightning-version", "2.6.6", cwd=project)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (project / "train.py").read_bytes() == before
