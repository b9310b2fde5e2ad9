"""Issue 27's targets in one command: amp-clipfix's CPU against ruff's parse-only pass.

Run it with the interpreter that has amp-clipfix, ruff, torch and lightning installed:

    python bench/targets.py                        # 7 pairs per case; /tmp/lightning-repo if any
    python bench/targets.py --pairs 5 --lightning-repo DIR --module-mb 5

Cases (each `amp-clipfix check --no-cache` against `ruff check --no-cache --isolated --select E9`
on the same paths, run as alternating pairs after one untimed warm-up of each):

1. a generated 25-file Lightning project without a finding (24 modules and a notebook, a YAML
   config): start-up is most of it; target <= 6x ruff;
2. the Lightning repository tree (`--lightning-repo`, default /tmp/lightning-repo: `src tests
   examples` of a clone or `git archive`; copied, never written; skipped when absent): <= 2x;
3. the `*.py` files of the installed torch + lightning packages plus one fused LightningModule
   (`fused_site.py`, bench/benchmark.py's): <= 1.5x;
4. the same corpus without it, no finding: <= 0.8x;
5. a generated module of `--module-mb` MB (bench/projects.py's) with one site, alone: under
   10 s of CPU and 500 MB (`check --no-cache -j 1`, and `--format json`, which fixes it too).

CPU is user + system time of the command and every process it reaped (its workers), from
`os.wait4` (scripts/corpus.py); the figure of a case is the median over the pairs of each tool,
and the ratio is that of the medians. Progress goes to stderr, the markdown report to stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import (  # noqa: E402
    FUSED_SITE,
    FUSED_SITE_NAME,
    build_corpus,
    child_environment,
    entry_point,
    load_average,
    machine_lines,
    verdict,
)
from corpus import MB, Measurement, measure  # noqa: E402
from projects import DEFAULT_REPO, REPO_FOLDERS, copy_repository, write_module  # noqa: E402

RUFF = ["check", "--no-cache", "--isolated", "--select", "E9"]
MODULE_SECONDS, MODULE_MB = 10.0, 500.0


@dataclass
class Case:
    name: str
    folder: Path
    paths: list[str]
    target: float  # amp-clipfix CPU / ruff CPU at most
    site: Path | None = None  # written before the case (one finding), removed after
    exits: tuple[int, ...] = (0,)  # amp-clipfix's accepted exit codes (1: findings)
    amp: list[Measurement] = field(default_factory=list)
    ruff: list[Measurement] = field(default_factory=list)

    def ratio(self) -> float:
        return median_cpu(self.amp) / max(median_cpu(self.ruff), 1e-9)


def median_cpu(runs: Sequence[Measurement]) -> float:
    return statistics.median(run.cpu_seconds for run in runs)


# --- the trees -----------------------------------------------------------------------------

MODEL = '''"""Model {index}."""
import lightning as L
import torch
from torch import nn


class Model{index}(L.LightningModule):
    def __init__(self, width: int = {width}):
        super().__init__()
        self.layer = nn.Linear(width, width)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
'''
UTILS = '''"""Helpers {index}."""
import math


def schedule_{index}(step: int, warmup: int = 100) -> float:
    return min(1.0, step / warmup) * math.cos(step / 1000)


CONSTANTS_{index} = {{"seed": {index}, "width": 32}}
'''
TRAIN = '''"""Train every model."""
import lightning as L

from models import model_0

trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0, max_epochs=1)
trainer.fit(model_0.Model0())
'''
CONFIG = "trainer:\n  precision: bf16-mixed\n  gradient_clip_val: 1.0\n"


def small_project(folder: Path) -> int:
    """A 25-file project without a finding: clipping under bf16-mixed, nothing fused."""
    (folder / "models").mkdir(parents=True)
    (folder / "utils").mkdir()
    (folder / "pyproject.toml").write_text('[project]\nname = "small"\n')
    for index in range(12):
        (folder / "models" / f"model_{index}.py").write_text(MODEL.format(index=index, width=32))
    for index in range(10):
        (folder / "utils" / f"utils_{index}.py").write_text(UTILS.format(index=index))
    (folder / "train.py").write_text(TRAIN)
    (folder / "config.yaml").write_text(CONFIG)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": TRAIN.splitlines(True)}
    notebook = {"cells": [cell] * 40, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "explore.ipynb").write_text(json.dumps(notebook, indent=1))
    return sum(1 for path in folder.rglob("*") if path.is_file() and path.suffix != ".toml")


# --- measuring -----------------------------------------------------------------------------


def run(command: list[str], folder: Path, env: dict[str, str], ok: tuple[int, ...]) -> Measurement:
    measurement = measure(command, folder, env, sample_tree=True)
    if measurement.returncode not in ok:
        tail = "\n".join((measurement.stdout + measurement.stderr).splitlines()[-15:])
        sys.exit(f"targets: `{' '.join(command)}` exited {measurement.returncode}:\n{tail}")
    return measurement


def measure_case(case: Case, env: dict[str, str], pairs: int) -> None:
    amp = [entry_point("amp-clipfix"), "check", "--no-cache", *case.paths]
    ruff = [entry_point("ruff"), *RUFF, *case.paths]
    ok = case.exits
    print(f"{case.name}: warm-up", file=sys.stderr, flush=True)
    run(amp, case.folder, env, ok)
    run(ruff, case.folder, env, (0, 1))
    for index in range(pairs):
        case.amp.append(run(amp, case.folder, env, ok))
        case.ruff.append(run(ruff, case.folder, env, (0, 1)))
        print(
            f"  pair {index + 1}: amp-clipfix {case.amp[-1].cpu_seconds:.3f} s, "
            f"ruff {case.ruff[-1].cpu_seconds:.3f} s",
            file=sys.stderr,
            flush=True,
        )


def measure_version(folder: Path, env: dict[str, str], pairs: int) -> list[str]:
    """`amp-clipfix --version` against the bare interpreter, alternating: start-up alone."""
    commands = {
        "`amp-clipfix --version`": [entry_point("amp-clipfix"), "--version"],
        "`python -c pass` (the interpreter alone)": [sys.executable, "-c", "pass"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    print("--version: warm-up", file=sys.stderr, flush=True)
    for command in commands.values():
        run(command, folder, env, (0,))
    for _ in range(pairs):
        for label, command in commands.items():
            times[label].append(run(command, folder, env, (0,)).cpu_seconds)
    lines = ["| start-up | runs | CPU s median (min–max) |", "|---|---:|---:|"]
    for label, values in times.items():
        lines.append(
            f"| {label} | {len(values)} | {statistics.median(values):.3f} "
            f"({min(values):.3f}–{max(values):.3f}) |"
        )
    return lines


@dataclass
class ModuleRun:
    label: str
    measurement: Measurement


def measure_module(folder: Path, env: dict[str, str], size_mb: float) -> list[ModuleRun]:
    path = folder / "module.py"
    write_module(path, int(size_mb * MB))
    runs = []
    for label, options in (("check", []), ("check --format json", ["--format", "json"])):
        command = [entry_point("amp-clipfix"), "check", "--no-cache", "-j", "1", *options]
        print(f"module: {label}", file=sys.stderr, flush=True)
        runs.append(ModuleRun(label, run([*command, path.name], folder, env, (1,))))
    return runs


# --- the report ----------------------------------------------------------------------------


def case_table(cases: Sequence[Case]) -> list[str]:
    lines = [
        "| case | pairs | amp-clipfix CPU s median (min–max) | ruff CPU s median (min–max) "
        "| ratio | target | |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for case in cases:
        amp = [run.cpu_seconds for run in case.amp]
        ruff = [run.cpu_seconds for run in case.ruff]
        lines.append(
            f"| {case.name} | {len(amp)} | {statistics.median(amp):.3f} ({min(amp):.3f}–"
            f"{max(amp):.3f}) | {statistics.median(ruff):.3f} ({min(ruff):.3f}–{max(ruff):.3f}) "
            f"| {case.ratio():.2f}x | <= {case.target}x | {verdict(case.ratio() <= case.target)} |"
        )
    return lines


def module_lines(runs: Sequence[ModuleRun], size_mb: float) -> list[str]:
    lines = [
        f"| {size_mb:g} MB module, one site | CPU s | wall s | peak MB (largest process) | |",
        "|---|---:|---:|---:|---|",
    ]
    for item in runs:
        measured = item.measurement
        met = measured.cpu_seconds < MODULE_SECONDS and measured.peak_mb < MODULE_MB
        lines.append(
            f"| `{item.label} --no-cache -j 1` | {measured.cpu_seconds:.2f} | "
            f"{measured.seconds:.2f} | {measured.peak_mb:.0f} | {verdict(met)} |"
        )
    return lines


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=7, help="alternating pairs per case [7]")
    parser.add_argument("--lightning-repo", type=Path, default=None, help="a Lightning checkout")
    parser.add_argument("--module-mb", type=float, default=5.0, help="the module's MB [5]")
    parser.add_argument("--no-repo", action="store_true", help="skip the Lightning repository")
    parser.add_argument("--no-corpus", action="store_true", help="skip torch + lightning")
    parser.add_argument("--no-module", action="store_true", help="skip the large module")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    load_before = load_average()
    report = ["## Issue 27's targets (CPU against `ruff check --select E9 --no-cache`)", ""]
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-targets-") as temporary:
        scratch = Path(temporary)
        env = child_environment(scratch)
        cases = []
        small = scratch / "small"
        files = small_project(small)
        cases.append(Case(f"{files}-file project, no finding", small, ["."], 6.0))
        repository = arguments.lightning_repo or (DEFAULT_REPO if DEFAULT_REPO.is_dir() else None)
        if arguments.no_repo:
            repository = None
        if repository is not None:
            tree = copy_repository(repository, scratch / "repository")
            name = f"Lightning repository ({tree.files} files)"
            # Its tests hold findings of the searching rules (ACF005-ACF009): exit 1 is fine.
            cases.append(Case(name, tree.path, [*REPO_FOLDERS], 2.0, exits=(0, 1)))
        if not arguments.no_corpus:
            corpus = build_corpus(scratch / "corpus")["all"]
            name = f"torch + lightning ({corpus.files} files)"
            site = corpus.path / FUSED_SITE_NAME
            cases.append(
                Case(f"{name} + one fused site", corpus.path, ["."], 1.5, site=site, exits=(1,))
            )
            # torch's and Lightning's own packages are library code, never searched (their
            # ACF012 calls in torch's tests are no finding): no finding at all, exit 0.
            cases.append(Case(f"{name}, no finding", corpus.path, ["."], 0.8))
        for case in cases:
            if case.site is not None:
                case.site.write_text(FUSED_SITE)
            measure_case(case, env, arguments.pairs)
            if case.site is not None:
                case.site.unlink()
        report += [*case_table(cases), ""]
        report += [*measure_version(small, env, arguments.pairs), ""]
        if repository is None and not arguments.no_repo:
            report += [f"Lightning repository: not measured ({DEFAULT_REPO} does not exist).", ""]
        if not arguments.no_module:
            runs = measure_module(scratch, env, arguments.module_mb)
            report += [*module_lines(runs, arguments.module_mb), ""]
    report += ["### Machine", "", *machine_lines(load_before), ""]
    print("\n".join(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
