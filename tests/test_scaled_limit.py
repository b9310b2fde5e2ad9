"""ACF005's scaled limit (issue 36): the GradScaler's scale is bound once per step and block, to a
name the function does not use already, and a limit multiplied by that name is seen as scaled,
so a second `apply` changes nothing and `check` finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main

PROGRAM = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss_scale = 0.5
        limit = loss_scale if batch_idx < 100 else 1.0
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        if batch_idx % 2:
            torch.nn.utils.clip_grad_norm_(self.parameters(), limit)
        torch.nn.utils.clip_grad_value_(self.parameters(), limit)
        torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm=limit)
        opt.step()
        opt.zero_grad()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

BINDING = """\
{indent}loss_scale_2 = getattr(
{indent}    getattr(self.trainer.precision_plugin, "scaler", None),
{indent}    "get_scale",
{indent}    lambda: 1.0,
{indent})()
"""


def test_the_scale_is_bound_once_per_block_to_a_free_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    args = ["--lightning-version", "2.6.6", "--no-cache", "."]

    applied = runner.invoke(main, ["apply", "--yes", *args])

    assert applied.exit_code == 0, applied.output
    fixed = (tmp_path / "train.py").read_text()
    assert "        loss_scale = 0.5\n" in fixed  # the user's name is left alone
    inner, outer = BINDING.format(indent=" " * 12), BINDING.format(indent=" " * 8)
    assert fixed.count("loss_scale_2 = getattr(") == 2  # the `if` block's, and the step's
    assert inner + "            torch.nn.utils.clip_grad_norm_(" in fixed
    assert outer + "        torch.nn.utils.clip_grad_value_(" in fixed
    assert "clip_grad_value_(self.parameters(), limit * loss_scale_2)" in fixed
    assert "clip_grad_norm_(self.parameters(), max_norm=limit * loss_scale_2)" in fixed
    compile(fixed, "train.py", "exec")
    checked = runner.invoke(main, ["check", *args])
    assert checked.exit_code == 0, checked.output
    again = runner.invoke(main, ["apply", "--yes", *args])
    assert again.exit_code == 0, again.output
    assert (tmp_path / "train.py").read_text() == fixed
