"""Benchmark `amp-clipfix check` against ruff and against libcst's own codemod runner.

Run it with the interpreter that has amp-clipfix, torch and lightning installed:

    python bench/benchmark.py                  # 5 runs each, 3 of the libcst runner
    python bench/benchmark.py --runs 3 --libcst-runs 1 --profile

It copies the *.py files of the installed `torch` and `lightning` packages into a temporary
folder, then measures, interleaved, the median wall time of N runs of

* `amp-clipfix check` vs `ruff check --no-cache --isolated --select E9` on torch + lightning,
* `amp-clipfix check` vs `python -m libcst.tool codemod noop.NOOPCommand --no-format` on lightning,

and the peak memory of every run: the largest single process (`ru_maxrss` as GNU time reports it,
which on Linux covers the reaped worker processes too) and the whole process tree (main process
plus workers), sampled as the sum of PSS every 20 ms; both are measured by scripts/corpus.py,
shared with scripts/sweep.py, which also builds the corpus. It prints a markdown table, the ratios
against the targets of issue 7 and the machine. `--fused-site-runs N` adds a row for the same
corpus plus one file with a finding (the prefilter's later stages then run too). `--profile` runs
`amp-clipfix check -j 1` once under cProfile and prints where the time goes. Progress goes to
stderr, the report to stdout.

Every tool is started as a subprocess of this interpreter's environment (its `amp-clipfix` and
`ruff` entry points, `python -m libcst.tool`). Byte code goes to a cache inside the temporary
folder (PYTHONPYCACHEPREFIX), warmed by one untimed run of each command, so that runs neither
recompile every module (PYTHONDONTWRITEBYTECODE) nor write `__pycache__` into the source tree.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The corpus and timer helpers are shared with scripts/sweep.py (scripts/corpus.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from corpus import MB, Measurement, Tree, measure, package_folder, tree_from_folder  # noqa: E402

PACKAGES = ("torch", "lightning")
LIGHTNING = "lightning"
TARGET_RUFF_RATIO = 3.0  # amp-clipfix wall time at most 3x ruff's on torch + lightning
TARGET_LIBCST_SPEEDUP = 20.0  # amp-clipfix at least 20x faster than the libcst runner
TARGET_PEAK_MB = 300.0
# With --fused-site-runs this file is added at the corpus root: one real finding, so the
# prefilter's later stages run (files that may configure a Trainer, then base-class files).
FUSED_SITE_NAME = "fused_site.py"
FUSED_SITE = """\
import torch
from lightning.pytorch import LightningModule, Trainer


class Model(LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


trainer = Trainer(precision="16-mixed", gradient_clip_val=1.0)
"""
WARM_IMPORTS = (
    "import importlib, pkgutil, amp_clipfix\n"
    "for module in pkgutil.walk_packages(amp_clipfix.__path__, 'amp_clipfix.'):\n"
    "    importlib.import_module(module.name)\n"
)
AMP_LABEL = "amp-clipfix check --no-cache"


# --- the corpus ----------------------------------------------------------------------------


def build_corpus(root: Path) -> dict[str, Tree]:
    """`root/torch`, `root/lightning`; returns the trees by name, plus `all` for the root."""
    root.mkdir(parents=True, exist_ok=True)
    trees: dict[str, Tree] = {}
    for name in PACKAGES:
        folder = package_folder(name)
        if folder is None:
            sys.exit(f"benchmark: package {name!r} is not installed for {sys.executable}")
        trees[name] = tree_from_folder(name, folder, root / name)
    trees["all"] = Tree(
        " + ".join(PACKAGES),
        root,
        sum(trees[name].files for name in PACKAGES),
        sum(trees[name].size for name in PACKAGES),
    )
    return trees


# --- the tools -----------------------------------------------------------------------------


@dataclass
class Tool:
    """One command on one tree, and its measurements."""

    label: str
    tree: Tree
    command: list[str]
    cwd: Path
    ok_codes: tuple[int, ...]
    files_pattern: str | None = None  # a regex whose group 1 counts files in the output
    runs: list[Measurement] = field(default_factory=list)
    files: int | None = None

    def median(self) -> float:
        return statistics.median(run.seconds for run in self.runs)

    def max_rss_mb(self) -> float:
        return max(run.peak_mb for run in self.runs)

    def tree_mb(self) -> float:
        return max(run.tree_mb for run in self.runs)


def scripts_folder() -> Path:
    return Path(sysconfig.get_path("scripts"))


def entry_point(name: str) -> str:
    """The console script `name` of this interpreter's environment, else one on PATH."""
    suffix = ".exe" if os.name == "nt" else ""
    candidate = scripts_folder() / f"{name}{suffix}"
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"benchmark: cannot find the `{name}` command next to {sys.executable}")
    return found


def amp_clipfix_command() -> list[str]:
    """How the bench scripts start amp-clipfix: the installed `amp-clipfix` console script, run
    by this interpreter. It is what users and the pre-commit hook run; `python -m amp_clipfix`
    pays besides for `runpy` and what it imports (3.4 M instructions, 1.5% of a 25-file
    project's cold check). The script imports `amp_clipfix.replay` by name, so PYTHONPATH (a
    baseline's `--pythonpath`) still decides which checkout's code runs."""
    return [sys.executable, entry_point("amp-clipfix")]


def amp_clipfix(tree: Tree, jobs: int | None) -> Tool:
    # --no-cache like ruff's: the untimed first run would otherwise fill the cache, and every
    # timed run would measure a cached run against ruff's full one.
    command = [entry_point("amp-clipfix"), "check", "--no-cache"]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    return Tool(
        AMP_LABEL,
        tree,
        [*command, str(tree.path)],
        tree.path,
        ok_codes=(0, 1),
        files_pattern=r"\bin (\d+) files?\b",
    )


def ruff(tree: Tree) -> Tool:
    command = [entry_point("ruff"), "check", "--no-cache", "--isolated", "--select", "E9"]
    label = "ruff check --no-cache --isolated --select E9"
    return Tool(label, tree, [*command, str(tree.path)], tree.path, ok_codes=(0, 1))


def libcst_runner(tree: Tree, jobs: int | None, cwd: Path) -> Tool:
    """libcst's runner, started in `cwd`, where `initialize` put `.libcst.codemod.yaml`.

    `--no-format` keeps black out of it, `--hide-progress` silences the progress line."""
    command = [sys.executable, "-m", "libcst.tool", "codemod", "noop.NOOPCommand"]
    command += ["--no-format", "--hide-progress"]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    return Tool(
        "python -m libcst.tool codemod noop.NOOPCommand --no-format",
        tree,
        [*command, str(tree.path)],
        cwd,
        ok_codes=(0,),
        files_pattern=r"Finished codemodding (\d+) files",
    )


def count_files(tool: Tool, measurement: Measurement) -> int | None:
    if tool.files_pattern is None:
        return None
    match = re.search(tool.files_pattern, measurement.stdout + measurement.stderr)
    return int(match.group(1)) if match else None


def ruff_file_count(tree: Tree, env: dict[str, str]) -> int | None:
    """How many files ruff itself checks in `tree` (its own discovery and exclusions)."""
    command = [entry_point("ruff"), "check", "--isolated", "--select", "E9", "--show-files"]
    result = subprocess.run(
        [*command, str(tree.path)], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        return None
    return sum(1 for line in result.stdout.splitlines() if line.strip().endswith(".py"))


def run_once(tool: Tool, env: dict[str, str], timed: bool) -> Measurement:
    measurement = measure(tool.command, tool.cwd, env, sample_tree=True)
    if measurement.returncode not in tool.ok_codes:
        tail = "\n".join((measurement.stdout + measurement.stderr).splitlines()[-15:])
        sys.exit(f"benchmark: `{' '.join(tool.command)}` exited {measurement.returncode}:\n{tail}")
    if tool.files is None:
        tool.files = count_files(tool, measurement)
    if timed:
        tool.runs.append(measurement)
    note = "" if timed else " (warm-up, not counted)"
    print(
        f"  {tool.label} on {tool.tree.name}: {measurement.seconds:.2f} s, "
        f"{measurement.peak_mb:.0f} MB{note}",
        file=sys.stderr,
        flush=True,
    )
    return measurement


def child_environment(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    env["NO_COLOR"] = "1"
    return env


# --- the report ----------------------------------------------------------------------------


def tool_version(name: str) -> str:
    if name == "ruff":
        try:
            output = subprocess.run(
                [entry_point("ruff"), "--version"], capture_output=True, text=True, check=True
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            return "?"
        return output.split()[-1] if output.split() else "?"
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def amp_clipfix_revision() -> str:
    """The git commit of an editable amp-clipfix checkout (with `+dirty`), else ''."""
    spec = importlib.util.find_spec("amp_clipfix")
    if spec is None or spec.origin is None:
        return ""
    folder = Path(spec.origin).parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"{commit}+dirty" if dirty else commit


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_total() -> str:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError):
        pass
    return "?"


def load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "?"


def machine_lines(load_before: str) -> list[str]:
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    revision = amp_clipfix_revision()
    versions = ", ".join(
        f"{name} {tool_version(name)}"
        for name in ("amp-clipfix", "libcst", "ruff", "torch", "lightning")
    )
    return [
        f"- CPU: {cpu_model()}, {cores} logical cores ({usable} usable), {memory_total()} memory",
        f"- OS: {platform.system()} {platform.release()}; Python {platform.python_version()} "
        f"({sys.executable})",
        f"- Versions: {versions}" + (f" (amp-clipfix git {revision})" if revision else ""),
        f"- Load average (1, 5, 15 min) before: {load_before}; after: {load_average()}",
    ]


def seconds_text(tool: Tool) -> str:
    low = min(run.seconds for run in tool.runs)
    high = max(run.seconds for run in tool.runs)
    if len(tool.runs) == 1:
        return f"{tool.median():.2f}"
    return f"{tool.median():.2f} ({low:.2f}–{high:.2f})"


def table(rows: Sequence[tuple[Tool, Tool | None]]) -> list[str]:
    """One line per tool; `ratio` is the tool's median over its baseline's (None: the tool is
    a baseline itself, or its baseline was not measured)."""
    lines = [
        "| tool | corpus | files | runs | median s (min–max) | ratio | peak MB (largest process)"
        " | peak MB (process tree) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for tool, baseline in rows:
        if baseline is None:
            ratio = "1.00 (baseline)" if tool.label != AMP_LABEL else "—"
        else:
            ratio = f"{tool.median() / baseline.median():.3f}"
            if tool.median() < baseline.median():
                ratio += f" ({baseline.median() / tool.median():.1f}x faster)"
        files = tool.files if tool.files is not None else tool.tree.files
        lines.append(
            f"| `{tool.label}` | {tool.tree.name} | {files} | {len(tool.runs)} | "
            f"{seconds_text(tool)} | {ratio} | {tool.max_rss_mb():.0f} | {tool.tree_mb():.0f} |"
        )
    return lines


def verdict(passed: bool) -> str:
    return "**met**" if passed else "**missed**"


def target_lines(
    amp_all: Tool, ruff_all: Tool, amp_lightning: Tool, libcst: Tool | None
) -> list[str]:
    ruff_ratio = amp_all.median() / ruff_all.median()
    lines = [
        f"- amp-clipfix / ruff on {amp_all.tree.name}: **{ruff_ratio:.2f}x** ruff's wall time "
        f"(target: at most {TARGET_RUFF_RATIO:.0f}x) — {verdict(ruff_ratio <= TARGET_RUFF_RATIO)}"
        + (
            ""
            if ruff_ratio <= TARGET_RUFF_RATIO
            else f", by {ruff_ratio / TARGET_RUFF_RATIO:.1f}x "
            f"({amp_all.median() - TARGET_RUFF_RATIO * ruff_all.median():.2f} s too slow)"
        )
    ]
    if libcst is None:
        lines.append("- libcst runner / amp-clipfix on lightning: not measured (--libcst-runs 0)")
    else:
        speedup = libcst.median() / amp_lightning.median()
        lines.append(
            f"- libcst runner / amp-clipfix on {amp_lightning.tree.name}: amp-clipfix is "
            f"**{speedup:.1f}x** faster (target: at least {TARGET_LIBCST_SPEEDUP:.0f}x) — "
            f"{verdict(speedup >= TARGET_LIBCST_SPEEDUP)}"
            + (
                ""
                if speedup >= TARGET_LIBCST_SPEEDUP
                else f", short by {TARGET_LIBCST_SPEEDUP / speedup:.1f}x"
            )
        )
    for tool in (amp_all, amp_lightning):
        peak = tool.max_rss_mb()
        lines.append(
            f"- amp-clipfix peak memory on {tool.tree.name}: **{peak:.0f} MB** largest process, "
            f"{tool.tree_mb():.0f} MB whole process tree (target: under {TARGET_PEAK_MB:.0f} MB)"
            f" — {verdict(peak < TARGET_PEAK_MB)}"
            + ("" if tool.tree_mb() < TARGET_PEAK_MB else "; the process tree is over it")
        )
    return lines


def measure_fused_site(arguments: argparse.Namespace, tree: Tree, env: dict[str, str]) -> Tool:
    """`amp-clipfix check` on the corpus plus one file with a fused-optimizer finding: what a
    project that has something to fix pays. The file is removed afterwards."""
    site = tree.path / FUSED_SITE_NAME
    site.write_text(FUSED_SITE)
    try:
        variant = Tree(
            f"{tree.name} + {FUSED_SITE_NAME}",
            tree.path,
            tree.files + 1,
            tree.size + site.stat().st_size,
        )
        tool = amp_clipfix(variant, arguments.jobs)
        # No warm-up: byte code and page cache are warm from the runs before.
        print(f"with {FUSED_SITE_NAME} (one finding):", file=sys.stderr)
        for _ in range(arguments.fused_site_runs):
            run_once(tool, env, timed=True)
    finally:
        site.unlink()
    return tool


def fused_site_line(fused: Tool, ruff_all: Tool) -> str:
    ratio = fused.median() / ruff_all.median()
    return (
        f"- Not a target, for context: with one fused-optimizer finding added "
        f"({FUSED_SITE_NAME}), amp-clipfix takes **{ratio:.2f}x** ruff's wall time and "
        f"{fused.max_rss_mb():.0f} MB (largest process), {fused.tree_mb():.0f} MB (process tree)."
    )


def prefilter_line(tree: Tree) -> str | None:
    """How many files of the corpus pass the first stage of amp-clipfix's prefilter (the files
    that may build a fused optimizer: the only ones parsed when none does); None when the
    prefilter cannot be asked (its functions are amp-clipfix internals and may change)."""
    try:
        from amp_clipfix.sources import prefilter

        test = prefilter.may_have_fused_optimizer
        passed = [path for path in tree.path.rglob("*.py") if test(path.read_bytes())]
    except Exception:  # noqa: BLE001 - an optional line of the report
        return None
    size = sum(path.stat().st_size for path in passed)
    return (
        f"- Prefilter on {tree.name}: {len(passed)} of {tree.files} files ({size / MB:.1f} MB) "
        "may build a fused optimizer, the only files parsed when none does."
    )


# --- the profile ---------------------------------------------------------------------------


def profile(tree: Tree, env: dict[str, str], scratch: Path, top: int, site: bool) -> list[str]:
    """`amp-clipfix check -j 1` once under cProfile in a fresh interpreter (imports included;
    one process, so the parsing that workers would do shows up too). With `site`, the corpus
    gets FUSED_SITE for the run."""
    if not site:
        return profile_run(tree, env, scratch, top)
    path = tree.path / FUSED_SITE_NAME
    path.write_text(FUSED_SITE)
    try:
        variant = Tree(f"{tree.name} + {FUSED_SITE_NAME}", tree.path, tree.files + 1, tree.size)
        return profile_run(variant, env, scratch, top)
    finally:
        path.unlink()


def profile_run(tree: Tree, env: dict[str, str], scratch: Path, top: int) -> list[str]:
    output = scratch / "check.prof"
    check = ["-m", "amp_clipfix", "check", "--no-cache", "--jobs", "1", str(tree.path)]
    # Byte code of every amp-clipfix module (and what they import) into the cache first, so
    # the profile shows no compiling; the corpus was just written, so it is in the page cache.
    subprocess.run([sys.executable, "-c", WARM_IMPORTS], env=env, check=True)
    command = [sys.executable, "-m", "cProfile", "-o", str(output), *check]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if result.returncode not in (0, 1) or not output.exists():
        return [f"profile failed (exit {result.returncode}):", "", result.stderr[-2000:]]
    stats = pstats.Stats(str(output))
    imports = max(
        (row[3] for key, row in stats.stats.items() if key[2] == "_find_and_load"), default=0.0
    )
    total = max((row[3] for row in stats.stats.values()), default=0.0)
    lines = [
        f"`python -m cProfile -m amp_clipfix check --jobs 1` on {tree.name} ({tree.files} files): "
        f"{seconds:.2f} s wall under the profiler, {total:.2f} s profiled, of which "
        f"{imports:.2f} s importing modules. Wrappers (runpy, click, the import machinery, "
        "`exec`) are left out of the lists.",
        "",
    ]
    for order, column in (("cumulative", 3), ("own (tottime)", 2)):
        rows = sorted(
            ((key, row) for key, row in stats.stats.items() if not is_wrapper(key)),
            key=lambda item: item[1][column],
            reverse=True,
        )[:top]
        lines += [f"Top {top} by {order} time:", "", "```text"]
        lines.append(f"{'cumulative s':>12} {'own s':>8} {'calls':>9}  function")
        for key, (_, calls, own, cumulative, _) in rows:
            lines.append(f"{cumulative:12.3f} {own:8.3f} {calls:9d}  {function_name(key)}")
        lines += ["```", ""]
    return lines


def is_wrapper(key: tuple[str, int, str]) -> bool:
    """Frames that only pass the call on: the interpreter's entry, click's dispatch, imports."""
    file, _, name = key
    return (
        "runpy" in file
        or file in ("<string>", "<frozen importlib._bootstrap>")
        or file.startswith("<frozen importlib._bootstrap")
        or f"{os.sep}click{os.sep}" in file
        or file.endswith(f"amp_clipfix{os.sep}__main__.py")
        or (file == "~" and name in ("<built-in method builtins.exec>", "<built-in method exec>"))
    )


def function_name(key: tuple[str, int, str]) -> str:
    """`package/module.py:line(function)`, shortened to the part after site-packages or src."""
    file, line, name = key
    if file == "~":
        return name
    for marker in (f"site-packages{os.sep}", f"{os.sep}src{os.sep}", f"lib{os.sep}python"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{file}:{line}({name})"


# --- main ----------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command [5]")
    parser.add_argument(
        "--libcst-runs", type=int, default=3, help="timed runs of the libcst runner [3]; 0 skips"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="pass --jobs N to amp-clipfix and the libcst runner [their default: the cores]",
    )
    parser.add_argument(
        "--fused-site-runs",
        type=int,
        default=0,
        metavar="N",
        help=f"also time N runs of amp-clipfix on the corpus plus {FUSED_SITE_NAME}, a file with "
        "one finding, which makes the prefilter's later stages run (more files go through "
        "libcst) [0: skip]",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also profile one `amp-clipfix check` run"
    )
    parser.add_argument(
        "--profile-only", action="store_true", help="only build the corpus and profile"
    )
    parser.add_argument(
        "--profile-corpus",
        choices=("all", LIGHTNING, "all+site"),
        default="all",
        help=f"the tree to profile; all+site: torch + lightning + {FUSED_SITE_NAME} [all]",
    )
    parser.add_argument("--top", type=int, default=15, help="profile lines to print [15]")
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="build the corpus in DIR and keep it"
    )
    arguments = parser.parse_args(argv)
    if arguments.runs < 1 or arguments.libcst_runs < 0 or arguments.fused_site_runs < 0:
        parser.error("--runs must be at least 1, --libcst-runs and --fused-site-runs at least 0")
    return arguments


def benchmark(arguments: argparse.Namespace, trees: dict[str, Tree], scratch: Path) -> None:
    env = child_environment(scratch)
    load_before = load_average()
    amp_all = amp_clipfix(trees["all"], arguments.jobs)
    ruff_all = ruff(trees["all"])
    amp_lightning = amp_clipfix(trees[LIGHTNING], arguments.jobs)
    # `initialize` writes the default .libcst.codemod.yaml (commands in libcst.codemod.commands)
    # in a folder of its own where the runner starts (the runner looks for it in its working
    # folder and above): no configuration above the temporary folder can interfere, and the
    # corpus holds nothing but the sources (amp-clipfix reads YAML configs too).
    libcst_folder = scratch / "libcst"
    libcst_folder.mkdir(exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "libcst.tool", "initialize", str(libcst_folder)],
        env=env,
        check=True,
        capture_output=True,
    )
    libcst = None
    if arguments.libcst_runs:
        libcst = libcst_runner(trees[LIGHTNING], arguments.jobs, libcst_folder)
    ruff_all.files = ruff_file_count(trees["all"], env)

    print("warm-up (byte-code cache, page cache):", file=sys.stderr)
    for tool in (amp_all, ruff_all, amp_lightning):
        run_once(tool, env, timed=False)
    if libcst is not None:  # one small file: compiles and caches libcst's byte code
        command = [*libcst.command[:-1], str(trees[LIGHTNING].path / "__init__.py")]
        small = Tool(libcst.label, trees[LIGHTNING], command, libcst.cwd, ok_codes=(0,))
        run_once(small, env, timed=False)

    for index in range(arguments.runs):
        print(f"run {index + 1} of {arguments.runs}:", file=sys.stderr)
        for tool in (amp_all, ruff_all, amp_lightning):
            run_once(tool, env, timed=True)
        if libcst is not None and index < arguments.libcst_runs:
            run_once(libcst, env, timed=True)
    if libcst is not None:
        for _ in range(arguments.runs, arguments.libcst_runs):
            run_once(libcst, env, timed=True)

    fused = measure_fused_site(arguments, trees["all"], env) if arguments.fused_site_runs else None

    if amp_all.files is not None and amp_all.files != trees["all"].files:
        print(
            f"note: amp-clipfix saw {amp_all.files} of the {trees['all'].files} files",
            file=sys.stderr,
        )
    rows: list[tuple[Tool, Tool | None]] = [(amp_all, ruff_all), (ruff_all, None)]
    if fused is not None:
        rows.append((fused, ruff_all))
    rows.append((amp_lightning, libcst))
    if libcst is not None:
        rows.append((libcst, None))

    report = [
        "## Benchmark",
        "",
        f"Corpus: {trees['all'].files} files, {trees['all'].size / MB:.1f} MB "
        f"(torch {trees['torch'].files} files, {trees['torch'].size / MB:.1f} MB; "
        f"lightning {trees[LIGHTNING].files} files, {trees[LIGHTNING].size / MB:.1f} MB).",
        "",
        *table(rows),
        "",
        "Ratio: the tool's median wall time over the baseline's on the same tree.",
        "",
        "### Targets",
        "",
        *target_lines(amp_all, ruff_all, amp_lightning, libcst),
    ]
    if fused is not None:
        report.append(fused_site_line(fused, ruff_all))
    stages = prefilter_line(trees["all"])
    if stages:
        report.append(stages)
    report += ["", "### Machine", "", *machine_lines(load_before), ""]
    print("\n".join(report), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-bench-") as temporary:
        scratch = Path(temporary)
        corpus = arguments.keep.resolve() if arguments.keep else scratch / "corpus"
        print(f"building the corpus in {corpus} ...", file=sys.stderr, flush=True)
        trees = build_corpus(corpus)
        print(
            f"corpus: {trees['all'].files} files, {trees['all'].size / MB:.1f} MB",
            file=sys.stderr,
        )
        if not arguments.profile_only:
            benchmark(arguments, trees, scratch)
        if arguments.profile or arguments.profile_only:
            env = child_environment(scratch)
            tree = trees[LIGHTNING if arguments.profile_corpus == LIGHTNING else "all"]
            site = arguments.profile_corpus == "all+site"
            print("profiling ...", file=sys.stderr, flush=True)
            lines = profile(tree, env, scratch, arguments.top, site)
            print("\n".join(["## Profile", "", *lines]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
