"""What reaches each optimizer step, per parameter group (copied next to the programs of the
`compose` runtime cases, which import it).

A hook before every optimizer step that is taken (a GradScaler skips the step of an overflow,
and the hook never runs then) keeps the norm of each parameter group's gradients as the
optimizer uses them, and the scale. `report(iterations)` prints one line the test reads.
"""

from __future__ import annotations

import json

import torch

PREFIX = "amp-clipfix groupmeter: "


class Meter:
    def __init__(self, scaler, max_norm: float) -> None:
        self.scaler = scaler
        self.max_norm = max_norm
        self.steps: list[dict] = []

    def watch(self, optimizer) -> None:
        inner = getattr(optimizer, "optimizer", optimizer)  # Fabric's / Lightning's wrapper

        def before_step(opt, args, kwargs) -> None:
            found_inf = getattr(opt, "found_inf", None)  # a fused step skipped in its kernel
            if found_inf is not None and float(found_inf) > 0:
                return
            grad_scale = getattr(opt, "grad_scale", None)
            divisor = float(grad_scale) if grad_scale is not None else 1.0
            groups = []
            for group in opt.param_groups:
                grads = [p.grad.detach().double() for p in group["params"] if p.grad is not None]
                norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
                groups.append(float(norm) / divisor)
            scale = float(self.scaler.get_scale()) if self.scaler is not None else 1.0
            self.steps.append({"groups": groups, "scale": scale})

        inner.register_step_pre_hook(before_step)

    def report(self, iterations: int) -> None:
        line = {"max_norm": self.max_norm, "iterations": iterations, "steps": self.steps}
        print(PREFIX + json.dumps(line), flush=True)
