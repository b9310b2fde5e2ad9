"""What ACF009's questions read of the project's `fit` calls (analysis/fits.py), and the scope
walk of the fit receivers (reaching.declared_names): less work, the same answers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main

PROJECT = """\
import lightning as L
import torch


class Manual(L.LightningModule):
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


class Auto(Manual):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = True


clipped = L.Trainer(max_epochs=1, gradient_clip_val=0.5)
clipped.fit(Manual(), train_dataloaders=torch.randn(64, 4, 32))
plain = L.Trainer(max_epochs=1)
plain.fit(Auto(), train_dataloaders=torch.randn(64, 4, 32))
"""


def check_reading_models(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, list[str]]:
    """`check`'s exit code and output, and the fit models it evaluated, as written."""
    from amp_clipfix.analysis import fits

    read: list[str] = []
    joined = fits.Fit.joined

    def spied(fit: fits.Fit) -> tuple[list[object], bool]:
        if fit._joined is None:
            read.append(ast.unparse(fit.model))
        return joined(fit)  # type: ignore[return-value]

    monkeypatch.setattr(fits.Fit, "joined", spied)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "."])
    return result.exit_code, result.output, read


def test_a_clipping_trainer_reads_the_models_of_its_own_fits_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(PROJECT, encoding="utf-8")
    code, output, read = check_reading_models(tmp_path, monkeypatch)
    assert code == 1
    assert "train.py:27:35: ACF009" in output
    assert "manual optimization: train.py:5 class Manual" in output
    assert "1 finding" in output
    assert read == ["Manual()"]  # `plain`'s fit of Auto() is no answer to its question


def test_the_model_of_the_other_trainer_still_decides_its_own_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both Trainers clip: each reads its own fit, and only the manual module is reported."""
    text = PROJECT.replace(
        "L.Trainer(max_epochs=1)", "L.Trainer(max_epochs=1, gradient_clip_val=1)"
    )
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    code, output, read = check_reading_models(tmp_path, monkeypatch)
    assert code == 1
    assert "train.py:27:35: ACF009" in output
    assert "train.py:29" not in output  # Auto optimizes automatically: its clip is right
    assert read == ["Manual()", "Auto()"]


SCOPES = """\
import os

def outer():
    x = 1
    def inner():
        nonlocal x
        x = 2
    if os.environ:
        try:
            global seen
        except OSError:
            global failed
        finally:
            pass
    for _ in range(2):
        with open("f") as f:
            while f:
                global looped
    match x:
        case 1:
            global matched
    class Holder:
        def method(self):
            global held
    return lambda: x
"""


def test_declared_names_are_those_of_every_global_and_nonlocal_inside_the_scope() -> None:
    from amp_clipfix.analysis.reaching import declared_names

    module = ast.parse(SCOPES)
    outer = module.body[1]
    assert isinstance(outer, ast.FunctionDef)
    lam = next(node for node in ast.walk(module) if isinstance(node, ast.Lambda))
    everything = {"x", "seen", "failed", "looped", "matched", "held"}
    assert declared_names(module) == everything
    assert declared_names(outer) == everything
    assert declared_names(outer.body[1]) == {"x"}  # inner
    assert declared_names(lam) == frozenset()
