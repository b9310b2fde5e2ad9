"""The monitor's cost per training step (`amp-clipfix trace`): one small fp16 training loop
(plain torch, a GradScaler, unscale_ + clip_grad_norm_, AdamW) run with and without the
monitor, several times each, alternating; prints the median CPU time per step of each (one
torch thread: CPU time is what a busy machine changes least).

    python bench/trace_cost.py [--steps 400] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from amp_clipfix.trace.launch import SITECUSTOMIZE, copy_monitor, environment

PROGRAM = """
import sys, time, torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
steps = int(sys.argv[1])
for n in range(steps + 20):
    if n == 20:
        start = time.process_time()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
print((time.process_time() - start) / steps * 1e3)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "train.py").write_text(PROGRAM)
        monitor = folder / "monitor"
        monitor.mkdir()
        copy_monitor(monitor)
        (monitor / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env = environment(monitor, folder / "trace.jsonl", 10**9, False, False)
        times: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(args.rounds):
            for name, extra in (("without", None), ("with", env)):
                out = subprocess.run(
                    [sys.executable, str(folder / "train.py"), str(args.steps)],
                    env=extra,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                times[name].append(float(out))
    without, with_ = (statistics.median(times[k]) for k in ("without", "with"))
    print(f"without the monitor: {without:.3f} ms/step (median of {args.rounds})")
    print(f"with the monitor:    {with_:.3f} ms/step ({(with_ / without - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
