"""A run that links no finding imports no module of fixes/ (choosing and making fixes; ~1 % of a
small project's `check`): there is nothing to choose among, `fix_project` would make no change
and no error, and the project's style (the ruff, black, flake8 and yapf settings it reads) is
not asked. The output is what it was; `--tracked-only`'s helper-module check still runs
(tests/test_hostile_fs.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

# Runs `check --no-cache --format json FOLDER` (JSON: the findings' edits are worked out) in a
# new interpreter, then names the modules of fixes/ and the rules it imported on stderr.
RUN = """
import contextlib, sys
from amp_clipfix import replay
sys.argv = ["amp-clipfix", "check", "--no-cache", "--format", "json", sys.argv[1]]
with contextlib.suppress(SystemExit):
    replay._main()
sys.stdout.flush()
names = ("amp_clipfix.fixes.", "amp_clipfix.rules.acf")
print(" ".join(sorted(m for m in sys.modules if m.startswith(names))), file=sys.stderr)
"""

# A fused AdamW and a Trainer that does not clip: their sites are read and linked by the rules,
# and nothing is found.
NO_FINDING = """import lightning as L
import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model())
"""
FINDING = NO_FINDING.replace("max_epochs=1", "gradient_clip_val=1.0")


def checked(folder: Path) -> tuple[dict[str, Any], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(folder)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), set(done.stderr.split())


def project(folder: Path, code: str) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["lightning>=2.1"]\n'
    )
    (folder / "train.py").write_text(code)
    return folder


def test_a_run_without_a_finding_imports_no_module_of_fixes(tmp_path: Path) -> None:
    report, modules = checked(project(tmp_path / "p", NO_FINDING))
    assert report["findings"] == [] and report["errors"] == []
    assert "amp_clipfix.rules.acf002" in modules  # the sites were linked
    assert not any(module.startswith("amp_clipfix.fixes.") for module in modules)


def test_a_run_with_a_finding_chooses_and_makes_its_fix(tmp_path: Path) -> None:
    report, modules = checked(project(tmp_path / "p", FINDING))
    findings = report["findings"]
    assert [finding["code"] for finding in findings] == ["ACF002"]
    assert findings[0]["fix"] is not None and findings[0]["fix"]["edits"]
    assert {"amp_clipfix.fixes.changes", "amp_clipfix.fixes.choose"} <= modules
