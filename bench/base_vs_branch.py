"""`check --no-cache --format json .` on each folder, a base tree's code and this tree's in turn
(so both see the same load), the median CPU (user + sys of the process and its workers) of
each, and whether the two JSON reports are the same bytes. Bytecode is cached outside the trees
(PYTHONPYCACHEPREFIX), as an installed tool has it, and warmed by one run of each first.

    git archive 66d0e41 src | tar -x -C /tmp/base
    python bench/base_vs_branch.py --base /tmp/base/src --runs 9 /work/corpora/karpathy+nanoGPT
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import amp_clipfix_command  # noqa: E402

# The console script, as users run it (benchmark.amp_clipfix_command); PYTHONPATH picks the tree.
COMMAND = [*amp_clipfix_command(), "check", "--no-cache", "--format", "json", "."]


def run(folder: Path, env: dict[str, str]) -> tuple[float, bytes]:
    process = subprocess.Popen(COMMAND, cwd=folder, env=env, stdout=subprocess.PIPE)
    assert process.stdout is not None
    output = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the base tree's src folder")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("folders", type=Path, nargs="+")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        branch = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(scratch) / "pycache"))
        branch.pop("PYTHONDONTWRITEBYTECODE", None)
        branch.pop("PYTHONPATH", None)
        base = dict(branch, PYTHONPATH=str(arguments.base.resolve()))
        print("| folder | base CPU ms | branch CPU ms | JSON |")
        print("|---|---:|---:|---|")
        for folder in arguments.folders:
            run(folder, base), run(folder, branch)
            times: dict[str, list[float]] = {"base": [], "branch": []}
            outputs: dict[str, bytes] = {}
            for _ in range(arguments.runs):
                for name, env in (("base", base), ("branch", branch)):
                    seconds, outputs[name] = run(folder, env)
                    times[name].append(seconds)
            same = "same" if outputs["base"] == outputs["branch"] else "DIFFERENT"
            medians = [statistics.median(times[name]) * 1000 for name in ("base", "branch")]
            print(f"| {folder.name} | {medians[0]:.0f} | {medians[1]:.0f} | {same} |", flush=True)


if __name__ == "__main__":
    main()
