"""Issue 35's corpus sweep: amp-clipfix's CPU against ruff's parse-only pass on fetched repos.

Run it with the interpreter that has amp-clipfix and ruff installed:

    python bench/corpora.py                             # every folder of /work/corpora
    python bench/corpora.py --root DIR --only NAME ...  # some of them
    python bench/corpora.py --save DIR                  # each JSON report to DIR/<name>.json
    python bench/corpora.py --compare DIR               # each JSON report against DIR/<name>.json
    python bench/corpora.py --pythonpath /tmp/base/src  # run another checkout (a baseline)

Each corpus is a folder of `--root` (a repository's HEAD checked out, never committed here; the
`baseline` folder and the `--save` / `--compare` folder are skipped). Per corpus, in this order:

- `amp-clipfix check --no-cache --format json <corpus>` once, not measured (`--cold` skips
  it): the bytecode cache is a fresh folder of the sweep's (PYTHONPYCACHEPREFIX, which
  Python also reads the standard library's and dependencies' bytecode from), and an installed
  tool has its bytecode; without this run the first corpus paid for compiling every module
  the tool imports (gpt-neox, first by name: 0.46 s against 0.15 s warm). `amp-clipfix` is
  the console script run by this interpreter (`benchmark.amp_clipfix_command`), what users
  and the pre-commit hook run: `python -m amp_clipfix` pays for runpy besides,
- the same command again, measured (exit 0 or 1),
- `ruff check --no-cache --isolated --select E9 <corpus>`, `--ruff-runs` times (5), its figure
  the run of median CPU: on the small corpora ruff takes 20-70 ms, a few clock ticks, and one
  run moved a ratio by a third (mmengine 13.0x and 18.5x in two sweeps a minute apart),

with CPU the user + system time of the process and every process it reaped (`os.wait4`, as
`resource.getrusage(RUSAGE_CHILDREN)` counts it) and memory the largest single process
(scripts/corpus.py's `measure`). The report (markdown, stdout) gives per corpus the number of
`*.py` files, both CPU figures, their ratio and amp-clipfix's peak MB, then the sum over the set.

A small corpus (at most `--small-files` `*.py` files, 100) is timed apart: both commands take
10-100 ms there, where one run's figure moves by a fifth with the load and the GNU time around
each command (which `measure` needs for memory) adds its own ~1.5 ms of CPU to both, a sixth
of ruff's ~10 ms, pulling the ratio towards 1. So after the runs above (kept for the JSON and
the peak), the two commands are run `--small-runs` times (9) in turn, amp-clipfix then ruff,
each alone (`corpus.command_cpu`: no GNU time), and each figure is its median. Larger corpora
are measured as before: their runs take seconds, against which neither moves the ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import amp_clipfix_command, child_environment, entry_point, load_average  # noqa: E402
from corpus import Measurement, command_cpu, measure  # noqa: E402

RUFF = ["check", "--no-cache", "--isolated", "--select", "E9"]
DEFAULT_ROOT = Path("/work/corpora")


@dataclass(frozen=True)
class Row:
    name: str
    files: int
    amp: Measurement
    ruff: Measurement
    same: str  # "" when not compared, else "same" / "DIFFERENT" / "new"
    paired: int = 0  # small corpus: both CPU figures are medians of this many runs in turn

    @property
    def ratio(self) -> float:
        return self.amp.cpu_seconds / max(self.ruff.cpu_seconds, 1e-3)


def corpora(root: Path, only: Sequence[str], reports: Sequence[Path | None] = ()) -> list[Path]:
    """The corpus folders of `root`: not `baseline`, nor a folder of saved reports in it."""
    skipped = {p.resolve() for p in reports if p is not None}
    folders = sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and p.name != "baseline" and p.resolve() not in skipped
    )
    if only:
        folders = [p for p in folders if p.name in only]
    return folders


def ruff_binary() -> str:
    """The ruff executable itself (not `python -m ruff`, whose interpreter start would count)."""
    try:
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

        return str(find_ruff_bin())
    except ImportError:
        return entry_point("ruff")


def python_files(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.py"))


def compare(report: str, name: str, folder: Path | None) -> str:
    if folder is None:
        return ""
    expected = folder / f"{name}.json"
    if not expected.exists():
        return "new"
    return "same" if expected.read_text(encoding="utf-8") == report else "DIFFERENT"


def sweep(arguments: argparse.Namespace, env: dict[str, str]) -> list[Row]:
    rows: list[Row] = []
    amp = [*amp_clipfix_command(), "check", "--no-cache", "--format", "json"]
    for folder in corpora(arguments.root, arguments.only, (arguments.save, arguments.compare)):
        print(f"corpus {folder.name} ...", file=sys.stderr, flush=True)
        if not arguments.cold:
            measure([*amp, "."], folder, env, timeout=arguments.timeout)
        amp_run = measure([*amp, "."], folder, env, timeout=arguments.timeout)
        ruff_runs = [
            measure([ruff_binary(), *RUFF, "."], folder, env)
            for _ in range(max(arguments.ruff_runs, 1))
        ]
        ruff_run = sorted(ruff_runs, key=lambda run: run.cpu_seconds)[len(ruff_runs) // 2]
        files = python_files(folder)
        paired = 0
        if files <= arguments.small_files and arguments.small_runs > 0:
            paired = arguments.small_runs
            amp_cpu, ruff_cpu = in_turn(
                [*amp, "."], [ruff_binary(), *RUFF, "."], folder, env, paired
            )
            amp_run = dataclasses.replace(amp_run, cpu_seconds=amp_cpu)
            ruff_run = dataclasses.replace(ruff_run, cpu_seconds=ruff_cpu)
        if amp_run.returncode not in (0, 1):
            tail = amp_run.stderr[-400:]
            print(f"  amp-clipfix exit {amp_run.returncode}: {tail}", file=sys.stderr)
        if arguments.save is not None:
            arguments.save.mkdir(parents=True, exist_ok=True)
            (arguments.save / f"{folder.name}.json").write_text(amp_run.stdout, encoding="utf-8")
        same = compare(amp_run.stdout, folder.name, arguments.compare)
        rows.append(Row(folder.name, files, amp_run, ruff_run, same, paired))
        print(
            f"  {amp_run.cpu_seconds:.3f} s vs ruff {ruff_run.cpu_seconds:.3f} s {same}",
            file=sys.stderr,
            flush=True,
        )
    return rows


def in_turn(
    amp: Sequence[str], ruff: Sequence[str], folder: Path, env: dict[str, str], runs: int
) -> tuple[float, float]:
    """The median CPU seconds of `runs` runs of each command, run alternately (the load then
    falls on both alike), each alone: no GNU time around it (`command_cpu`)."""
    amp_cpu: list[float] = []
    ruff_cpu: list[float] = []
    for _ in range(runs):
        amp_cpu.append(command_cpu(amp, folder, env))
        ruff_cpu.append(command_cpu(ruff, folder, env))
    return statistics.median(amp_cpu), statistics.median(ruff_cpu)


def report(rows: Sequence[Row], load_before: str) -> list[str]:
    lines = [
        "| corpus | .py files | amp-clipfix CPU s | ruff E9 CPU s | ratio | peak MB | same |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.name}{' (small)' if row.paired else ''} | {row.files} "
            f"| {row.amp.cpu_seconds:.3f} | {row.ruff.cpu_seconds:.3f} "
            f"| {row.ratio:.1f}x | {row.amp.peak_mb:.0f} | {row.same or '-'} |"
        )
    amp_total = sum(r.amp.cpu_seconds for r in rows)
    ruff_total = sum(r.ruff.cpu_seconds for r in rows)
    files = sum(r.files for r in rows)
    peak = max((r.amp.peak_mb for r in rows), default=0)
    ratio = amp_total / max(ruff_total, 1e-3)
    lines.append(
        f"| **all {len(rows)}** | {files} | {amp_total:.2f} | {ruff_total:.2f} "
        f"| {ratio:.1f}x | {peak:.0f} | |"
    )
    notes = ["", f"Load average before: {load_before}; after: {load_average()}."]
    paired = {row.paired for row in rows if row.paired}
    if paired:
        runs = ", ".join(str(count) for count in sorted(paired))
        notes.append(f"(small): CPU figures are medians of {runs} runs of each, in turn.")
    return [*lines, *notes]


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--pythonpath", default=None, help="put this first on PYTHONPATH")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--cold", action="store_true", help="measure the first run (no unmeasured run first)"
    )
    parser.add_argument("--ruff-runs", type=int, default=5, help="ruff's median of this many")
    parser.add_argument(
        "--small-files", type=int, default=100, help="a corpus of this many *.py files or fewer"
    )
    parser.add_argument(
        "--small-runs", type=int, default=9, help="a small corpus: runs of each in turn (0: none)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-corpora-") as scratch:
        env = child_environment(Path(scratch))
        if arguments.pythonpath:
            paths = [arguments.pythonpath, env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        rows = sweep(arguments, env)
    print("\n".join(report(rows, load_before)))
    return 1 if any(r.same == "DIFFERENT" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
