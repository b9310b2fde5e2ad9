"""Start-up cost of `amp-clipfix check` on a tiny project (issue 40), measured as the CPU time
(user + sys) of each run, which a loaded machine changes far less than the wall time; the
variants run in turn, `--runs` times each, and the median (and the quartiles) is printed.

    python bench/startup.py --runs 30

Variants: the replay of an unchanged check (cache on, second run on), a check without the
cache (the command line read, the project discovered and prefiltered), the same through click
(an option the quick reader leaves to click), and `python -c pass` / `import click` for scale.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import click'": [sys.executable, "-c", "import click"],
    "check (replayed)": [sys.executable, "-m", "amp_clipfix", "check", "."],
    "check --no-cache": [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", "."],
    "check --no-cache --color auto (click)": [
        sys.executable,
        "-m",
        "amp_clipfix",
        "check",
        "--no-cache",
        "--color",
        "auto",
        ".",
    ],
}


def tiny_project(folder: Path) -> None:
    (folder / "pkg").mkdir()
    (folder / "pyproject.toml").write_text('[project]\nname = "tiny"\n')
    (folder / "pkg" / "a.py").write_text("import os\n\n\ndef f():\n    return os.getcwd()\n")
    (folder / "pkg" / "b.py").write_text("X = 1\n")


def cpu_of(command: list[str], cwd: Path) -> tuple[float, float]:
    """(user + sys CPU, wall) seconds of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        tiny_project(folder)
        for command in VARIANTS.values():  # warm: caches, the replay's record, bytecode
            cpu_of(command, folder)
        cpu: dict[str, list[float]] = {variant: [] for variant in args.variants}
        wall: dict[str, list[float]] = {variant: [] for variant in args.variants}
        for _ in range(args.runs):
            for variant in args.variants:
                used, took = cpu_of(VARIANTS[variant], folder)
                cpu[variant].append(used)
                wall[variant].append(took)
    print(f"| variant | CPU ms, median (q1-q3) | wall ms, median | ({args.runs} runs each) |")
    print("|---|---|---|---|")
    for variant in args.variants:
        q1, median, q3 = statistics.quantiles(cpu[variant], n=4)
        print(
            f"| {variant} | {median * 1000:.0f} ({q1 * 1000:.0f}-{q3 * 1000:.0f}) "
            f"| {statistics.median(wall[variant]) * 1000:.0f} | |"
        )


if __name__ == "__main__":
    main()
