"""The trial resolution (which Trainer files to read) runs only where its answer can leave a file
out: a Python file not read yet that may configure a Trainer."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import project_resolve
from amp_clipfix.cli import main

MODULE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=True)
"""

TRAIN = """\
import lightning as L

from model import Model

L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())
"""

# A Trainer of a module without a fused optimizer: a file the trial leaves out.
OTHER = """\
import lightning as L


class Plain(L.LightningModule):
    pass


L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Plain())
"""


def run_check(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, list[Path]]:
    """`check` over a project; what it prints, and the projects the trial resolution ran on."""
    trials: list[Path] = []
    trial = project_resolve.trial_trainer_files

    def noted(root: Path, *rest: object) -> set[Path] | None:
        trials.append(root)
        return trial(root, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(project_resolve, "trial_trainer_files", noted)
    monkeypatch.chdir(project)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, trials


def test_no_trial_where_every_trainer_file_is_read_already(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Trainer sits beside the fused optimizer (read in the first stage), and no other file
    may configure one: the trial could leave nothing out, so it does not run."""
    (tmp_path / "model.py").write_text(MODULE + "\n\n" + TRAIN.split("\n", 3)[3], "utf-8")
    (tmp_path / "data.py").write_text("import torch\n\nDATA = torch.zeros(3)\n", "utf-8")

    code, output, trials = run_check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "model.py:7:59: ACF002" in output
    assert trials == []


def test_the_trial_runs_where_it_can_leave_a_trainer_file_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trainers in files not read yet: the trial runs, and the finding links the Trainer that
    fits the fused module (not the other one)."""
    (tmp_path / "model.py").write_text(MODULE, "utf-8")
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")
    (tmp_path / "other.py").write_text(OTHER, "utf-8")

    code, output, trials = run_check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "model.py:7:59: ACF002" in output
    assert "other.py" not in output
    assert len(trials) == 1
