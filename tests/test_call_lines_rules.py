"""The rules' questions that need the calls of one name only: a Trainer's fits (`.fit`),
`<x>.clip_gradients(...)` and its partials (ACF007), a LightningCLI's `trainer_defaults=`.
Read from the calls on the lines writing the name (`Summary.calls_writing`, branch `pl10`) or
from every call of the module, each report must be the same: checked on programs that write
the name on another line than the call, in an NFKC spelling (Python reads `ﬁt` as `fit`), in a
partial or inside a function (`scope_fits`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_manual_gate import MODULE as MANUAL  # a module that optimizes by hand

from amp_clipfix.analysis.summary import Summary
from amp_clipfix.cli import main

FITS = {
    "lines": """\
trainer = L.Trainer(precision="16-mixed", gradient_clip_val=0.5)
trainer.fit(
    Model(),
)
""",
    "continued": """\
trainer = L.Trainer(precision="16-mixed", gradient_clip_val=0.5)
trainer.fit(Model())  # .fit( written
other = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0)
other.\\
    fit(Model())
""",
    "nfkc": """\
trainer = L.Trainer(precision="16-mixed", gradient_clip_val=0.5)
print("call .fit(")
trainer.\N{LATIN SMALL LIGATURE FI}t(Model())
""",
    "function": """\
def main():
    trainer = L.Trainer(precision="16-mixed", gradient_clip_val=0.5)
    trainer.fit(
        Model())


def nfkc():
    trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=0.5)
    trainer.\N{LATIN SMALL LIGATURE FI}t(Model())  # .fit(
""",
}

FABRIC = """\
import functools

import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)
clip = functools.partial(fabric.clip_gradients, max_norm=0.5)
other = functools.partial(
    fabric.\N{FULLWIDTH LATIN SMALL LETTER C}lip_gradients, max_norm=2.0
)

for batch in torch.randn(10, 8, 32, device=fabric.device):
    fabric.backward(model(batch).sum())
    fabric.\\
        clip_gradients(model, optimizer, max_norm=0.5)
    fabric.\N{FULLWIDTH LATIN SMALL LETTER C}lip_gradients(model, optimizer, max_norm=1.0)
    clip(model, optimizer)
    other(model, optimizer)
    optimizer.step()
    optimizer.zero_grad()
"""

CLI = """\
from lightning.pytorch.cli import LightningCLI

from model import Model


def main():
    LightningCLI(
        Model,
        trainer_defaults={"gradient_clip_val": 0.5, "precision": "16-mixed"},
    )


def nfkc():
    LightningCLI(
        Model, \N{FULLWIDTH LATIN SMALL LETTER T}rainer_defaults={"gradient_clip_val": 1.0}
    )
"""


def report(root: Path, monkeypatch: pytest.MonkeyPatch, whole: bool) -> tuple[int, list[str]]:
    """`check --format json` of the project: exit code and the findings' codes and places;
    `whole`: every question reads every call of its module (the walk before this branch)."""
    if whole:
        monkeypatch.setattr(Summary, "calls_writing", lambda self, *_, **__: self.walked_calls())
    monkeypatch.chdir(root)
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    monkeypatch.undo()
    found = json.loads(result.stdout)["findings"]
    return result.exit_code, [json.dumps(finding, sort_keys=True) for finding in found]


def same_as_whole(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    code, findings = report(root, monkeypatch, whole=False)
    assert (code, findings) == report(root, monkeypatch, whole=True)
    return [json.loads(finding)["code"] for finding in findings]


@pytest.mark.parametrize("train", sorted(FITS))
def test_a_trainers_fits_as_the_whole_walk_finds_them(
    train: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(f"import lightning as L\n\n{MANUAL}\n\n{FITS[train]}")
    codes = same_as_whole(tmp_path, monkeypatch)
    assert "ACF009" in codes


def test_clip_gradients_and_its_partials_as_the_whole_walk_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(FABRIC)
    codes = same_as_whole(tmp_path, monkeypatch)
    assert codes.count("ACF007") >= 4


def test_trainer_defaults_as_the_whole_walk_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "model.py").write_text(MANUAL)
    (tmp_path / "cli.py").write_text(CLI)
    codes = same_as_whole(tmp_path, monkeypatch)
    assert "ACF009" in codes
