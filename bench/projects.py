"""Benchmark `amp-clipfix check` on a repository tree and on one huge module (issues 12 and 17).

Run it with the interpreter that has amp-clipfix and ruff installed:

    python bench/projects.py                          # /tmp/lightning-repo, 5 runs; 5 MB module
    python bench/projects.py --lightning-repo ~/src/pytorch-lightning --runs 3
    python bench/projects.py --no-repo --sizes 1,2,5  # only the module, a row per size

1. **Repository tree** (issue 12). `--lightning-repo DIR` is a `git clone` (or a `git archive`)
   of Lightning-AI's pytorch-lightning; nothing is ever downloaded. Its `src/`, `tests/` and
   `examples/` and its top-level files are copied into a temporary folder (so the cache of the
   warm runs is written there, not into DIR), where `--runs` runs of

   * `amp-clipfix check --no-cache src tests examples`
   * `ruff check --no-cache --isolated --select E9 src tests examples`

   are measured, interleaved: CPU time (user + system of the command and every process it reaped,
   from `os.wait4`; the target is amp-clipfix within 3x of ruff), wall time, peak memory, the
   findings (there must be none) and the files each tool read. Then `amp-clipfix check` without
   `--no-cache`, `--runs` pairs: the first run of a pair starts without a cache and writes it,
   the second finds the tree unchanged (target: at least 5x less CPU than the first).
2. **Large module** (issue 17). A generated module of `--size-mb` MB (default 5) of top-level
   assignments (numbers, strings, dicts, lists, calls) with one LightningModule building
   `torch.optim.AdamW(self.parameters(), fused=True)` at the top and
   `Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())` at the bottom: exactly
   one finding. `amp-clipfix check --no-cache -j 1 FILE` is measured once per size (`--sizes 1,2,5`
   adds rows, to show that time and memory grow linearly); targets: under 10 s of CPU on one
   core and under 500 MB.

Every command is started from this interpreter's environment (its `amp-clipfix` and `ruff` entry
points) and measured by scripts/corpus.py like bench/benchmark.py, whose helpers this script
imports. Byte code goes to a cache inside the temporary folder (PYTHONPYCACHEPREFIX;
PYTHONDONTWRITEBYTECODE is dropped from the children's environment), warmed by one untimed run
of each command. Progress goes to stderr, the markdown report to stdout.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The timer (scripts/corpus.py) and the environment and report helpers (bench/benchmark.py) are
# shared with the corpus benchmark, so both measure the same way.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import (  # noqa: E402
    Tool,
    child_environment,
    entry_point,
    load_average,
    machine_lines,
    ruff_file_count,
    verdict,
)
from corpus import MB, Measurement, Tree, measure  # noqa: E402

from amp_clipfix.cache_layout import CACHE_DIR  # noqa: E402

DEFAULT_REPO = Path("/tmp/lightning-repo")
REPO_FOLDERS = ("src", "tests", "examples")
COPY_IGNORED = shutil.ignore_patterns(".git", "__pycache__", CACHE_DIR, ".ruff_cache")
TARGET_CPU_RATIO = 3.0  # amp-clipfix's CPU at most 3x ruff's on the repository (issue 12)
TARGET_CACHE_SPEEDUP = 5.0  # a second, cached check at least 5x cheaper than the first
TARGET_MODULE_SECONDS = 10.0  # a 5 MB module on one core (issue 17)
TARGET_MODULE_MB = 500.0
EXPECTED_MODULE_FINDINGS = 1
# amp-clipfix's last text line: "3 findings (2 fixable with --strategy auto) in 2 files (640 files
# checked); ..." ("0 findings (...) in 640 files checked; ..." when there are none).
SUMMARY = re.compile(r"^(\d+) findings? .*?\b(\d+) files? checked\b", re.MULTILINE)
FINDING = re.compile(r"^\S.*?:\d+:\d+: ([A-Z]+\d+) ", re.MULTILINE)


# --- measuring -----------------------------------------------------------------------------


@dataclass
class Row:
    """One command and its timed runs; `findings` holds the codes of each run's findings."""

    tool: Tool
    findings: list[list[str]] = field(default_factory=list)
    timeouts: int = 0
    needs_summary: bool = False  # amp-clipfix: a run without its summary line crashed

    @property
    def runs(self) -> list[Measurement]:
        return self.tool.runs

    def median(self, value: Callable[[Measurement], float]) -> float:
        return statistics.median(value(run) for run in self.runs)

    def spread(self, value: Callable[[Measurement], float]) -> str:
        """`median (min–max)`, or the one figure of a single run."""
        values = [value(run) for run in self.runs]
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"

    def cpu(self) -> float:
        return self.median(cpu_of)

    def wall(self) -> float:
        return self.median(wall_of)

    def peak_mb(self) -> float:
        return max(run.peak_mb for run in self.runs)

    def tree_mb(self) -> float:
        return max(run.tree_mb for run in self.runs)

    def finding_counts(self) -> list[int]:
        return [len(codes) for codes in self.findings]


def cpu_of(run: Measurement) -> float:
    return run.cpu_seconds


def wall_of(run: Measurement) -> float:
    return run.seconds


def reported(output: str) -> tuple[list[str], int | None]:
    """The finding codes amp-clipfix printed, and the file count of its summary line (None
    without one: ruff, or a run that died)."""
    summaries = SUMMARY.findall(output)
    files = int(summaries[-1][1]) if summaries else None
    return FINDING.findall(output), files


def run_once(
    row: Row, env: dict[str, str], timed: bool = True, timeout: float | None = None
) -> Measurement:
    """Run the row's command once; a timed run is kept with its findings. A failing command
    (an exit code other than the tool's) ends the benchmark with its last lines."""
    tool = row.tool
    measurement = measure(tool.command, tool.cwd, env, timeout=timeout, sample_tree=True)
    output = measurement.stdout + measurement.stderr
    codes, files = reported(output)
    if measurement.timed_out:
        row.timeouts += timed
    elif measurement.returncode not in tool.ok_codes or (row.needs_summary and files is None):
        # A traceback exits 1 too, like a finding: without the summary line the run crashed.
        tail = "\n".join(output.splitlines()[-15:])
        sys.exit(f"projects: `{' '.join(tool.command)}` exited {measurement.returncode}:\n{tail}")
    if tool.files is None and files is not None:
        tool.files = files
    if timed:
        tool.runs.append(measurement)
        row.findings.append(codes)
    note = "" if timed else " (warm-up, not counted)"
    note += " (timed out, killed)" if measurement.timed_out else ""
    print(
        f"  {tool.label} on {tool.tree.name}: {measurement.cpu_seconds:.2f} s CPU, "
        f"{measurement.seconds:.2f} s wall, {measurement.peak_mb:.0f} MB, "
        f"{len(codes)} findings{note}",
        file=sys.stderr,
        flush=True,
    )
    return measurement


def amp_clipfix(label: str, tree: Tree, options: Sequence[str], paths: Sequence[str]) -> Row:
    command = [entry_point("amp-clipfix"), "check", *options, *paths]
    return Row(Tool(label, tree, command, tree.path, ok_codes=(0, 1)), needs_summary=True)


# --- 1. the repository tree ----------------------------------------------------------------


def repository_folder(argument: Path | None) -> Path | None:
    """`--lightning-repo`, else DEFAULT_REPO when it exists, else None (the part is skipped)."""
    folder = argument if argument is not None else DEFAULT_REPO
    if argument is None and not folder.is_dir():
        return None
    missing = [name for name in REPO_FOLDERS if not (folder / name).is_dir()]
    if missing:
        sys.exit(f"projects: {folder} has no {', '.join(missing)}: is it a Lightning checkout?")
    return folder.resolve()


def copy_repository(source: Path, target: Path) -> Tree:
    """`src`, `tests`, `examples` and the top-level files (pyproject.toml, .gitignore: what
    decides the projects and the ignored files) of `source`, without `.git` or caches."""
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.is_file():
            shutil.copy2(entry, target / entry.name)
    for name in REPO_FOLDERS:
        shutil.copytree(source / name, target / name, ignore=COPY_IGNORED, symlinks=True)
    python = [path for path in target.rglob("*.py") if path.is_file()]
    size = sum(path.stat().st_size for path in python)
    return Tree(f"{source.name} ({' '.join(REPO_FOLDERS)})", target, len(python), size)


@dataclass
class RepositoryResult:
    tree: Tree
    source: Path
    amp: Row
    ruff: Row
    cache_first: Row
    cache_second: Row


def measure_repository(
    source: Path, scratch: Path, env: dict[str, str], runs: int
) -> RepositoryResult:
    print(f"copying {source} ...", file=sys.stderr, flush=True)
    tree = copy_repository(source, scratch / "repository")
    amp = amp_clipfix("amp-clipfix check --no-cache", tree, ["--no-cache"], REPO_FOLDERS)
    ruff_command = [entry_point("ruff"), "check", "--no-cache", "--isolated", "--select", "E9"]
    ruff_label = "ruff check --no-cache --isolated --select E9"
    ruff = Row(Tool(ruff_label, tree, [*ruff_command, *REPO_FOLDERS], tree.path, ok_codes=(0, 1)))
    counts = [ruff_file_count(Tree(name, tree.path / name, 0, 0), env) for name in REPO_FOLDERS]
    ruff.tool.files = None if None in counts else sum(count or 0 for count in counts)

    print("warm-up (byte-code cache, page cache):", file=sys.stderr)
    for row in (amp, ruff):
        run_once(row, env, timed=False)
    for index in range(runs):
        print(f"run {index + 1} of {runs}:", file=sys.stderr)
        for row in (amp, ruff):
            run_once(row, env)

    print("with the cache (first run writes it, second reads it):", file=sys.stderr)
    first = amp_clipfix("amp-clipfix check (cache cold)", tree, [], REPO_FOLDERS)
    second = amp_clipfix("amp-clipfix check (cache warm)", tree, [], REPO_FOLDERS)
    for index in range(runs):
        print(f"pair {index + 1} of {runs}:", file=sys.stderr)
        for cache in list(tree.path.rglob(CACHE_DIR)):  # one per project (root without marker)
            shutil.rmtree(cache, ignore_errors=True)
        run_once(first, env)
        run_once(second, env)
    return RepositoryResult(tree, source, amp, ruff, first, second)


def findings_text(row: Row) -> str:
    counts = sorted(set(row.finding_counts()))
    if not row.tool.label.startswith("amp-clipfix"):
        return "—"
    text = "/".join(str(count) for count in counts)
    codes = sorted({code for run in row.findings for code in run})
    return f"{text} ({', '.join(codes)})" if codes else text


def repository_table(result: RepositoryResult) -> list[str]:
    lines = [
        "| command | files | runs | CPU s median (min–max) | wall s median (min–max) "
        "| peak MB (largest process) | peak MB (process tree) | findings |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in (result.amp, result.ruff, result.cache_first, result.cache_second):
        files = row.tool.files if row.tool.files is not None else "?"
        lines.append(
            f"| `{row.tool.label}` | {files} | {len(row.runs)} | {row.spread(cpu_of)} | "
            f"{row.spread(wall_of)} | {row.peak_mb():.0f} | {row.tree_mb():.0f} | "
            f"{findings_text(row)} |"
        )
    return lines


def repository_targets(result: RepositoryResult) -> list[str]:
    ratio = result.amp.cpu() / result.ruff.cpu() if result.ruff.cpu() else float("inf")
    wall_ratio = result.amp.wall() / result.ruff.wall()
    findings = max(result.amp.finding_counts())
    first, second = result.cache_first, result.cache_second
    speedup = first.cpu() / second.cpu() if second.cpu() else float("inf")
    wall_speedup = first.wall() / second.wall()
    return [
        f"- amp-clipfix / ruff in CPU time: **{ratio:.1f}x** (target: at most "
        f"{TARGET_CPU_RATIO:.0f}x) — {verdict(ratio <= TARGET_CPU_RATIO)}; in wall time "
        f"{wall_ratio:.1f}x",
        f"- findings of `check --no-cache`: **{findings}** (target: 0) — {verdict(findings == 0)}",
        f"- cached second run: **{speedup:.1f}x** less CPU than the first (target: at least "
        f"{TARGET_CACHE_SPEEDUP:.0f}x) — {verdict(speedup >= TARGET_CACHE_SPEEDUP)}; "
        f"{wall_speedup:.1f}x in wall time",
    ]


def repository_report(result: RepositoryResult) -> list[str]:
    tree = result.tree
    return [
        "### Repository tree (issue 12)",
        "",
        f"{result.source}: `{' '.join(REPO_FOLDERS)}` and the top-level files, copied to a "
        f"temporary folder; {tree.files} Python files, {tree.size / MB:.1f} MB. Files: as "
        "each tool reports them (amp-clipfix's summary line, `ruff --show-files`).",
        "",
        *repository_table(result),
        "",
        *repository_targets(result),
    ]


# --- 2. the large module -------------------------------------------------------------------

MODULE_HEAD = '''\
"""A generated module (bench/projects.py): top-level data around one Lightning training run."""

import torch
from lightning.pytorch import LightningModule, Trainer


def compute_shape(*dims, scale=1.0):
    return tuple(int(dim * scale) for dim in dims)


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


'''
MODULE_LABEL = "amp-clipfix check --no-cache -j 1"
MODULE_TAIL = """

trainer = Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""


def module_lines() -> Iterator[str]:
    """Top-level assignments, in a cycle of five shapes; the list refers back to the number."""
    index = 0
    while True:
        index += 1
        name = f"{index:06d}"
        shape = index % 5
        if shape == 1:
            yield f"value_{name} = {index}\n"
        elif shape == 2:
            yield f'label_{name} = "layer_{index}.weight"\n'
        elif shape == 3:
            settings = f'{{"lr": 0.001, "depth": {index % 12}, "tag": "run-{index}"}}'
            yield f"settings_{name} = {settings}\n"
        elif shape == 4:
            yield f"shape_{name} = compute_shape({index % 64}, {index % 7} + 1, scale=0.5)\n"
        else:
            yield f'items_{name} = [value_{index - 4:06d}, {index}, "item-{index}"]\n'


def write_module(path: Path, size: int) -> int:
    """A module of about `size` bytes (never less); returns its line count."""
    body: list[str] = []
    length = len(MODULE_HEAD) + len(MODULE_TAIL)
    for line in module_lines():
        if length >= size:
            break
        body.append(line)
        length += len(line)
    text = MODULE_HEAD + "".join(body) + MODULE_TAIL
    path.write_text(text)
    return text.count("\n")


@dataclass
class ModuleRow:
    requested_mb: float  # --size-mb / --sizes
    size_mb: float  # what was written
    lines: int
    row: Row


def measure_module(
    sizes: Sequence[float], scratch: Path, env: dict[str, str], runs: int, timeout: float
) -> list[ModuleRow]:
    folder = scratch / "module"
    folder.mkdir()
    options = ["--no-cache", "-j", "1"]
    warm = folder / "warm_up.py"  # small: compiles the same code paths, not a 5 MB run
    write_module(warm, 20_000)
    print("large module, warm-up:", file=sys.stderr)
    warm_tree = Tree(warm.name, folder, 1, warm.stat().st_size)
    run_once(amp_clipfix(MODULE_LABEL, warm_tree, options, [warm.name]), env, timed=False)
    warm.unlink()
    rows = []
    for size_mb in sizes:
        path = folder / f"module_{size_mb:g}mb.py"
        lines = write_module(path, int(size_mb * MB))
        tree = Tree(path.name, folder, 1, path.stat().st_size)
        row = amp_clipfix(MODULE_LABEL, tree, options, [path.name])
        print(f"{path.name} ({lines} lines):", file=sys.stderr)
        for _ in range(runs):
            run_once(row, env, timeout=timeout)
        rows.append(ModuleRow(size_mb, tree.size / MB, lines, row))
        path.unlink()
    return rows


def module_report(rows: Sequence[ModuleRow], target_mb: float, timeout: float) -> list[str]:
    lines = [
        "### Large module (issue 17)",
        "",
        "`amp-clipfix check --no-cache -j 1 FILE` on a generated module: top-level assignments "
        'with one LightningModule (fused AdamW) and one `Trainer(precision="16-mixed", '
        "gradient_clip_val=1.0).fit(Model())`, so exactly one finding.",
        "",
        "| size MB | lines | runs | CPU s median (min–max) | wall s median (min–max) "
        "| CPU s per MB | peak MB (largest process) | findings |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for module in rows:
        row = module.row
        if not row.runs or row.timeouts:
            lines.append(
                f"| {module.size_mb:.1f} | {module.lines} | {len(row.runs)} | "
                f"> {timeout:.0f} (killed) | | | | |"
            )
            continue
        lines.append(
            f"| {module.size_mb:.1f} | {module.lines} | {len(row.runs)} | {row.spread(cpu_of)} | "
            f"{row.spread(wall_of)} | {row.cpu() / module.size_mb:.2f} | {row.peak_mb():.0f} | "
            f"{findings_text(row)} |"
        )
    return [*lines, "", *module_targets(rows, target_mb)]


def module_targets(rows: Sequence[ModuleRow], target_mb: float) -> list[str]:
    measured = [module for module in rows if module.row.runs and not module.row.timeouts]
    target = next((module for module in rows if module.requested_mb == target_mb), None)
    if target is None or target not in measured:
        return [f"- {target_mb:g} MB module: timed out — {verdict(False)}"]
    row = target.row
    findings = row.finding_counts()
    result = [
        f"- {target.size_mb:.1f} MB module: **{row.cpu():.1f} s** CPU on one core (target: under "
        f"{TARGET_MODULE_SECONDS:.0f} s) — {verdict(row.cpu() < TARGET_MODULE_SECONDS)}; wall "
        f"{row.wall():.1f} s",
        f"- peak memory: **{row.peak_mb():.0f} MB** (target: under {TARGET_MODULE_MB:.0f} MB) — "
        f"{verdict(row.peak_mb() < TARGET_MODULE_MB)}",
        f"- findings: **{'/'.join(map(str, sorted(set(findings))))}** (target: exactly "
        f"{EXPECTED_MODULE_FINDINGS}) — "
        f"{verdict(set(findings) == {EXPECTED_MODULE_FINDINGS})}",
    ]
    if len(measured) > 1:
        small, large = measured[0], measured[-1]
        growth = (large.row.cpu() / large.size_mb) / (small.row.cpu() / small.size_mb)
        result.append(
            f"- growth: CPU s per MB at {large.size_mb:.1f} MB is **{growth:.2f}x** that at "
            f"{small.size_mb:.1f} MB (1.00 is linear; start-up weighs more on small sizes)"
        )
    return result


# --- main ----------------------------------------------------------------------------------


def sizes_argument(text: str) -> list[float]:
    try:
        sizes = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of MB: {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("sizes must be positive")
    return sizes


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--lightning-repo",
        type=Path,
        metavar="DIR",
        help=f"a clone of Lightning-AI's pytorch-lightning [{DEFAULT_REPO} if it exists]",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs on the repository [5]")
    parser.add_argument("--size-mb", type=float, default=5.0, help="the module's MB [5]")
    parser.add_argument(
        "--sizes", type=sizes_argument, default=[], help="more module sizes, e.g. 1,2,5"
    )
    parser.add_argument("--module-runs", type=int, default=1, help="timed runs per size [1]")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds before a module run is killed [1800]"
    )
    parser.add_argument("--no-repo", action="store_true", help="skip the repository tree")
    parser.add_argument("--no-module", action="store_true", help="skip the large module")
    arguments = parser.parse_args(argv)
    if arguments.runs < 1 or arguments.module_runs < 1 or arguments.size_mb <= 0:
        parser.error("--runs and --module-runs must be at least 1, --size-mb positive")
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    repository = None if arguments.no_repo else repository_folder(arguments.lightning_repo)
    report = ["## Projects: a repository tree and a huge module", ""]
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-projects-") as temporary:
        scratch = Path(temporary)
        env = child_environment(scratch)
        if repository is not None:
            result = measure_repository(repository, scratch, env, arguments.runs)
            report += [*repository_report(result), ""]
        elif not arguments.no_repo:
            report += [f"Repository tree: not measured ({DEFAULT_REPO} does not exist).", ""]
        if not arguments.no_module:
            sizes = sorted({*arguments.sizes, arguments.size_mb})
            rows = measure_module(sizes, scratch, env, arguments.module_runs, arguments.timeout)
            report += [*module_report(rows, arguments.size_mb, arguments.timeout), ""]
    report += ["### Machine", "", *machine_lines(load_before), ""]
    print("\n".join(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
