"""The project of issue 35's growth case, shared by bench/factories.py and tests/test_engine.py:
`count` modules, each a fused-optimizer factory and the LightningModule that calls it, and one
Trainer that clips under 16-mixed (`train.py`): one finding per module."""

from __future__ import annotations

from pathlib import Path

FACTORY = """import lightning as L
import torch


def make_optimizer_{i}(params, fused=True):
    return torch.optim.AdamW(params, lr=1e-3, fused=fused)


class Module{i}(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer_{i}(self.parameters())
"""
TRAIN = """import lightning as L

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
"""


def write_project(root: Path, count: int) -> None:
    """`root/train.py` and `root/pkg/f<i>.py` for i < count."""
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    for i in range(count):
        (package / f"f{i}.py").write_text(FACTORY.format(i=i), encoding="utf-8")
