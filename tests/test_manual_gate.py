"""The manual-optimization searches read only what their answer can depend on (issue 35):
ACF005 reads no function where no code of the project can clip, and ACF009 looks for the fits
of a Trainer only in the code its value cannot leave. Counted with the files `check` parses
(tests/spied.py); what a user sees (findings, exit code) is the same as a full read."""

from __future__ import annotations

from pathlib import Path

import pytest
from spied import check_counting_parses

MODULE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

TRAIN = """\
import lightning as L

from model import Model

L.Trainer(precision="16-mixed").fit(Model())
"""

CLIP = "        torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)\n"


def test_no_function_is_read_where_no_code_can_clip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module optimizing by hand under fp16, and no clip written anywhere: ACF005 has
    nothing to find, so it parses neither the module nor what it calls."""
    (tmp_path / "model.py").write_text(MODULE, "utf-8")
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")

    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)

    assert code == 0, output
    assert output.startswith("0 findings "), output
    assert "model.py" not in parsed


def test_the_clip_written_between_backward_and_step_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same module with torch's clip between `manual_backward` and `step`: the search
    runs, reads the module, and reports the clip."""
    clipping = MODULE.replace("        opt.step()\n", CLIP + "        opt.step()\n")
    (tmp_path / "model.py").write_text(clipping, "utf-8")
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")

    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)

    assert code == 1, output
    assert "model.py:15:9: ACF005" in output
    assert "model.py" in parsed


HELPER = """\
import torch


def backward_and_clip(module, loss):
    module.manual_backward(loss)
    torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
"""


def test_a_clip_in_a_helper_of_another_file_is_found_through_its_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other step runs its backward and a clip in a helper of another module, which
    knows the module only from its caller: the module's step reaches them before its
    `opt.step()`, the helper's `module` is the module (read through the helper's callers), and
    the clip is reported where it is written."""
    module = MODULE.replace(
        "import torch\n", "import torch\nfrom helpers import backward_and_clip\n"
    )
    module = module.replace(
        "        self.manual_backward(loss)\n",
        "        if batch_idx % 2:\n"
        "            self.manual_backward(loss)\n"
        "        else:\n"
        "            backward_and_clip(self, loss)\n",
    )
    (tmp_path / "model.py").write_text(module, "utf-8")
    (tmp_path / "helpers.py").write_text(HELPER, "utf-8")
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")

    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)

    assert code == 1, output
    assert "helpers.py:6:5: ACF005" in output
    assert {"model.py", "helpers.py"} <= set(parsed)


CLIPPING_TRAINER = """\
import lightning as L

from model import Model


def main():
    trainer = L.Trainer(gradient_clip_val=0.5)
    trainer.fit(Model())
    print(trainer.logger)
"""

# Fits of other Trainers, in a module the clipping Trainer's value cannot reach.
OTHER_FITS = """\
def fit_all(trainer, models):
    for model in models:
        trainer.fit(model)
"""


def test_a_local_trainer_is_looked_for_in_its_own_function_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF009: the clipping Trainer is a local that its function reads only as the receiver of
    attributes, so its fits are in that function: the module is found, and the module of other
    fits is not parsed to look at its receivers."""
    (tmp_path / "model.py").write_text(MODULE, "utf-8")
    (tmp_path / "train.py").write_text(CLIPPING_TRAINER, "utf-8")
    (tmp_path / "other.py").write_text(OTHER_FITS, "utf-8")

    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)

    assert code == 1, output
    assert "train.py:7:25: ACF009" in output
    assert "other.py" not in parsed


FACTORY = """\
import lightning as L


def make_trainer():
    return L.Trainer(gradient_clip_val=0.5)
"""

FITTED_ELSEWHERE = """\
from factory import make_trainer
from model import Model

make_trainer().fit(Model())
"""


def test_a_trainer_that_leaves_its_function_is_followed_to_every_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF009: a factory returns the clipping Trainer and another module fits it: every fit of
    the project is read, and the module that fit trains is found."""
    (tmp_path / "model.py").write_text(MODULE, "utf-8")
    (tmp_path / "factory.py").write_text(FACTORY, "utf-8")
    (tmp_path / "train.py").write_text(FITTED_ELSEWHERE, "utf-8")

    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)

    assert code == 1, output
    assert "factory.py:5:22: ACF009" in output
    assert "train.py" in parsed
