"""What a cold `check` of a small project imports (issue 35: a 25-file project at most 6x
ruff): a project in which no file may build a fused optimizer has nothing to parse, so the
parsing module (analysis/parse_pool.py: the process pool, the per-file collection) is not
imported; a project with such a file still parses it and reports its finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_small_check_costs import RUN, SRC, small_project

PARSING_MODULE = "amp_clipfix.analysis.parse_pool"


def run(root: Path, tmp_path: Path) -> tuple[dict[str, list[str]], dict[str, object]]:
    """The modules `check --no-cache --format json .` imported in a fresh interpreter, and
    its report (exit 0 or 1)."""
    noted = tmp_path / "noted.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(noted), "check", "--no-cache", "--format", "json", "."],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(noted.read_text()), json.loads(done.stdout)


def test_a_project_with_nothing_to_parse_does_not_import_the_parser(tmp_path: Path) -> None:
    noted, report = run(small_project(tmp_path / "project"), tmp_path)
    summary = report["summary"]
    assert isinstance(summary, dict)
    assert (summary["files"], summary["findings"], summary["errors"]) == (4, 0, 0)
    assert "amp_clipfix.analysis.project_collect" in noted["modules"]  # the files were read
    assert PARSING_MODULE not in noted["modules"]


def test_a_project_with_a_fused_optimizer_still_parses_it(tmp_path: Path) -> None:
    root = small_project(tmp_path / "project")
    (root / "src" / "model.py").write_text(
        "import torch\nfrom lightning.pytorch import LightningModule, Trainer\n\n\n"
        "class Model(LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n\n\n"
        'trainer = Trainer(precision="16-mixed", gradient_clip_val=1.0)\n'
    )
    noted, report = run(root, tmp_path)
    findings = report["findings"]
    assert isinstance(findings, list)
    assert [finding["code"] for finding in findings] == ["ACF002"]
    assert PARSING_MODULE in noted["modules"]
