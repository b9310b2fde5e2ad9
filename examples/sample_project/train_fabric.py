"""Fabric loop: fp16 AMP + a fused AdamW + clipping -> NotImplementedError in Lightning."""

import lightning as L
import torch
from torch import nn


def main() -> None:
    fabric = L.Fabric(accelerator="cuda", precision="16-mixed")
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)  # fused for speed
    model, optimizer = fabric.setup(model, optimizer)

    for step in range(100):
        x = torch.randn(16, 32, device=fabric.device)
        loss = model(x).pow(2).mean()
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
        if step % 10 == 0:
            fabric.print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
