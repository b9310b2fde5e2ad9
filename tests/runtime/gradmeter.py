"""What reaches each optimizer step, measured from outside the training code (copied next to the
runtime programs of the silent-clipping cases, which import it).

Every backward leaves each parameter's gradient multiplied by the GradScaler's scale; a hook run
after it is accumulated keeps its squared norm. Just before the optimizer steps (a step the
scaler skips for an overflow never gets there) the norm of the gradients it will use is the
applied norm, and the kept squares divided by the scale give the true norm of that step.
`report()` prints one line the runtime test reads.
"""

from __future__ import annotations

import json
import math

import torch

PREFIX = "amp-clipfix gradmeter: "


class Meter:
    def __init__(self, scaler, max_norm: float) -> None:
        self.scaler = scaler
        self.max_norm = max_norm
        self.squares: dict[int, float] = {}
        self.backwards = 0
        self.steps: list[dict[str, float]] = []
        self.first: int | None = None

    def watch(self, optimizer, parameters) -> None:
        """Measure every step of `optimizer` (a torch optimizer) over these parameters."""
        parameters = list(parameters)
        for parameter in parameters:
            parameter.register_post_accumulate_grad_hook(self.accumulated)
        self.first = id(parameters[0])
        ids = [id(p) for p in parameters]

        def before_step(opt, args, kwargs) -> None:
            # A fused optimizer is stepped even on an overflow step: the GradScaler hands it
            # `found_inf` (the kernel then skips) and, unless its gradients were unscaled
            # already, the `grad_scale` the kernel divides them by.
            found_inf = getattr(opt, "found_inf", None)
            if found_inf is not None and float(found_inf) > 0:
                return
            grad_scale = getattr(opt, "grad_scale", None)
            divisor = float(grad_scale) if grad_scale is not None else 1.0
            scale = float(self.scaler.get_scale()) if self.scaler is not None else 1.0
            grads = [
                p.grad.detach().double()
                for g in opt.param_groups
                for p in g["params"]
                if p.grad is not None
            ]
            norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
            applied = float(norm) / divisor
            true = math.sqrt(sum(self.squares.get(i, 0.0) for i in ids)) / scale
            self.steps.append({"applied": applied, "true": true, "scale": scale})

        optimizer.register_step_pre_hook(before_step)

    def accumulated(self, parameter) -> None:
        if id(parameter) == self.first:
            self.backwards += 1
        self.squares[id(parameter)] = float(parameter.grad.detach().double().norm() ** 2)

    def report(self) -> None:
        result = {
            "max_norm": self.max_norm,
            "steps": self.steps,
            "skipped": self.backwards - len(self.steps),
        }
        print(PREFIX + json.dumps(result), flush=True)
