"""Corpora and timers shared by the development scripts (bench/benchmark.py, scripts/sweep.py).

Both scripts build a corpus of real Python code in a temporary folder and run a command on it
while measuring wall time and peak memory; this module is the one place that does either, so the
two report figures measured the same way. It uses only the standard library (the scripts run it
from the development environment, it is not part of the package):

- `package_folder(name)`: an installed package's folder, found without importing it;
- `tree_from_folder(name, source, target)`: copy only the `.py` files of any folder (an installed
  package, a checkout of a repository) into the corpus, as a `Tree`;
- `measure(command, cwd)`: run one command and return its `Measurement` (wall seconds, CPU
  seconds: user + system of the command and the workers it reaped, from `os.wait4`, and memory).

Memory: the largest single process comes from GNU time (`%M`, the `ru_maxrss` of the command as
its own `wait4` reports it, which on Linux covers the workers it reaped too). Without GNU time it
is the `ru_maxrss` of our own `os.wait4`, an upper bound: Linux carries the high-water mark of the
forking process (the script itself) across `exec` into the child's figure. With `sample_tree`,
the whole process tree is sampled too: the sum of PSS (shared pages split between the processes
sharing them, so forked workers are not counted twice) every 20 ms from `/proc` (Linux only; a
sample can miss a short peak). MB are decimal (10^6 bytes) throughout.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MB = 1_000_000  # decimal megabytes, for sizes and memory alike
SAMPLE_SECONDS = 0.02
SKIPPED_FOLDERS = frozenset({"__pycache__", ".git"})


# --- the corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A folder of the corpus and what it holds: `files` Python files of `size` bytes."""

    name: str
    path: Path
    files: int
    size: int


def package_folder(name: str) -> Path | None:
    """The installed package's folder, found without importing it (importing torch is slow);
    None when it is not installed for this interpreter."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def tree_from_folder(name: str, source: Path, target: Path) -> Tree:
    """Copy every `.py` file under `source` to `target`, keeping the layout (an installed
    package is mostly binaries; a checkout has a `.git`): the corpus holds only Python code."""
    files = size = 0
    for folder, subfolders, names in os.walk(source):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS)
        relative = Path(folder).relative_to(source)
        for file_name in sorted(names):
            if not file_name.endswith(".py"):
                continue
            destination = target / relative / file_name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(folder) / file_name, destination)
            files += 1
            size += destination.stat().st_size
    return Tree(name, target, files, size)


# --- running one command -------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One run of a command: exit code, output, wall time and peak memory in bytes."""

    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_bytes: int  # the largest single process, workers included
    tree_bytes: int = 0  # the largest sampled sum of PSS over the process tree (0: not sampled)
    timed_out: bool = False
    cpu_seconds: float = 0.0  # user + system time of the process and the children it reaped

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / MB

    @property
    def tree_mb(self) -> float:
        return self.tree_bytes / MB


def gnu_time() -> str | None:
    """/usr/bin/time when it is GNU time (it takes -f), else None."""
    candidate = shutil.which("time", path="/usr/bin:/bin")
    if candidate is None:
        return None
    try:
        probe = subprocess.run(
            [candidate, "-f", "%M", "true"], capture_output=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return candidate if probe.returncode == 0 else None


GNU_TIME = gnu_time()


def descendants(pid: int) -> list[int]:
    """`pid` and every live process below it (via /proc/PID/task/TID/children)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending.extend(int(child) for child in children.read().split())
            except OSError:
                continue
    return found


def tree_memory(pid: int) -> int:
    """Bytes of proportional set size (shared pages split between sharers) of the tree."""
    total = 0
    for process in descendants(pid):
        try:
            with open(f"/proc/{process}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue
    return total


class TreeSampler(threading.Thread):
    """Samples the memory of a process tree until told to stop; Linux only (else 0)."""

    def __init__(self, pid: int, enabled: bool = True) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.enabled = enabled
        self.peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        if not self.enabled or not Path("/proc/self/smaps_rollup").exists():
            return
        while not self.stopped.is_set():
            self.peak = max(self.peak, tree_memory(self.pid))
            self.stopped.wait(SAMPLE_SECONDS)


def max_rss_bytes(usage: resource.struct_rusage) -> int:
    """`ru_maxrss` in bytes: it is in KiB on Linux, in bytes on macOS."""
    return int(usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024)


def cpu_seconds(usage: resource.struct_rusage) -> float:
    """User + system seconds of a reaped process: `wait4` adds in every descendant that was
    itself waited for (a pool's workers, and the command when GNU time wraps it), so this is
    the CPU of the whole run, on every core. A process left running (not reaped) is missed."""
    return float(usage.ru_utime + usage.ru_stime)


def command_cpu(command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> float:
    """The CPU seconds of one run of `command` alone (user + system of it and the workers it
    reaped, from our own `os.wait4`), its output discarded. No GNU time around it: its own
    start-up (~1.5 ms of CPU) would be counted in, which on a command of ~10 ms is a sixth of
    the figure. For the CPU of short runs; `measure` gives memory and output."""
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here, not by Popen
    return cpu_seconds(usage)


def gnu_time_peak(path: Path) -> int | None:
    """The `%M` figure (KiB) GNU time wrote to `path` (its last line), in bytes."""
    if not path.exists():
        return None
    words = path.read_text().split()
    return int(words[-1]) * 1024 if words and words[-1].isdigit() else None


def kill_tree(pid: int) -> None:
    """Kill `pid` and everything below it (GNU time, the command, its workers)."""
    for process in reversed(descendants(pid)):
        with contextlib.suppress(OSError):
            os.kill(process, signal.SIGKILL)


def measure(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
    sample_tree: bool = False,
) -> Measurement:
    """Run `command` once in `cwd`: wall time from start to reaping, peak memory (see the module
    docstring). Output goes to files (never a pipe that could fill up), so nothing is shown on a
    terminal and a progress bar, if any, stays off. After `timeout` seconds the command and its
    workers are killed (the measurement says `timed_out`)."""
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-measure-") as folder:
        out_path, err_path, peak_path = (Path(folder) / n for n in ("out", "err", "peak"))
        wrapper = [GNU_TIME, "-f", "%M", "-o", str(peak_path)] if GNU_TIME else []
        with out_path.open("wb") as out, err_path.open("wb") as err:
            start = time.perf_counter()
            process = subprocess.Popen(
                [*wrapper, *command],
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
            sampler = TreeSampler(process.pid, enabled=sample_tree)
            sampler.start()
            killer = threading.Timer(timeout or 0, kill_tree, (process.pid,))
            if timeout:
                killer.start()
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
            killer.cancel()
            sampler.stopped.set()
            sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        return Measurement(
            command=tuple(command),
            returncode=process.returncode,
            stdout=out_path.read_bytes().decode("utf-8", "replace"),
            stderr=err_path.read_bytes().decode("utf-8", "replace"),
            seconds=seconds,
            peak_bytes=gnu_time_peak(peak_path) or max_rss_bytes(usage),
            tree_bytes=sampler.peak,
            timed_out=timeout is not None and seconds >= timeout,
            cpu_seconds=cpu_seconds(usage),
        )
