"""Issue 35's growth case: N files, each defining a fused-optimizer factory, and nothing else.

    python bench/factories.py 1000 4000 20000            # CPU per size, this checkout
    python bench/factories.py 1000 --pythonpath DIR/src  # another checkout (a baseline)

Each size is a fresh project in a temporary folder: `pkg/f<i>.py` holds
`def make_optimizer_<i>(params, fused=True): return torch.optim.AdamW(..., fused=fused)`,
and `train.py` a Trainer that clips under 16-mixed. Every factory makes
the resolution ask for its callers; before the project index every question scanned every file
(quadratic). One `amp-clipfix check --no-cache` per size against `ruff check --select E9`; CPU of
the process tree (scripts/corpus.py's `measure`), markdown on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import amp_clipfix_command, child_environment  # noqa: E402
from corpora import RUFF, ruff_binary  # noqa: E402
from corpus import measure  # noqa: E402
from factory_project import write_project  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--pythonpath", default=None, help="put this first on PYTHONPATH")
    parser.add_argument("--timeout", type=float, default=900.0)
    arguments = parser.parse_args(argv)
    print("| files | amp-clipfix CPU s | ruff E9 CPU s | peak MB | exit |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-factories-") as scratch:
        env = child_environment(Path(scratch))
        if arguments.pythonpath:
            paths = [arguments.pythonpath, env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        for size in arguments.sizes:
            root = Path(scratch) / f"p{size}"
            write_project(root, size)
            amp = [*amp_clipfix_command(), "check", "--no-cache", "."]
            run = measure(amp, root, env, timeout=arguments.timeout)
            ruff = measure([ruff_binary(), *RUFF, "."], root, env)
            timed_out = " (timed out)" if run.timed_out else ""
            print(
                f"| {size} | {run.cpu_seconds:.2f}{timed_out} | {ruff.cpu_seconds:.2f} "
                f"| {run.peak_mb:.0f} | {run.returncode} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
