"""Trainer run: mixed precision + gradient_clip_val + the fused optimizer of model.py."""

import lightning as L
import torch
from model import Regressor
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    data = TensorDataset(torch.randn(256, 32), torch.randn(256, 1))
    trainer = L.Trainer(max_epochs=2, precision="16-mixed", gradient_clip_val=1.0)
    trainer.fit(Regressor(), DataLoader(data, batch_size=32))


if __name__ == "__main__":
    main()
