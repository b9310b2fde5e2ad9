"""Run the user's command with the monitor installed, as `coverage run` does: a temporary folder
first on PYTHONPATH holds the monitor and a `sitecustomize.py` that chains the environment's own;
the record path and the options travel in environment variables, so child processes (torchrun,
DDP, multiprocessing spawn) are monitored too. Nothing of torch or Lightning is imported here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amp_clipfix.records import record

MONITOR_MODULE = "_amp_clipfix_monitor"

SITECUSTOMIZE = f'''"""amp-clipfix trace: the environment's own sitecustomize, then the monitor."""
import os as _os
import sys as _sys


def _chain():
    import importlib.machinery
    import importlib.util

    here = _os.path.dirname(_os.path.abspath(__file__))
    path = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mine = _sys.modules.get("sitecustomize")
    module = importlib.util.module_from_spec(spec)
    _sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if mine is not None:
            _sys.modules["sitecustomize"] = mine


_chain()
import {MONITOR_MODULE}

{MONITOR_MODULE}.install()
'''


@record(frozen=True)
class TraceRun:
    """One monitored run: its records and how the command ended."""

    records: tuple[dict[str, Any], ...]
    returncode: int
    bad_lines: int = 0


def copy_monitor(folder: Path) -> None:
    """The monitor package, as `_amp_clipfix_monitor/` (its modules import each other only)."""
    target = folder / MONITOR_MODULE
    target.mkdir()
    for source in sorted((Path(__file__).parent / "monitor").glob("*.py")):
        (target / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")


def environment(
    folder: Path, record_path: Path, steps: int, overflow: bool, norms: bool
) -> dict[str, str]:
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(folder) + (os.pathsep + old if old else "")
    env["AMP_CLIPFIX_TRACE"] = str(record_path)
    env["AMP_CLIPFIX_TRACE_STEPS"] = str(steps)
    env["AMP_CLIPFIX_TRACE_OVERFLOW"] = "1" if overflow else "0"
    env["AMP_CLIPFIX_TRACE_NORMS"] = "1" if norms else "0"
    return env


def run_traced(
    command: Sequence[str],
    record_path: Path | None,
    steps: int,
    overflow: bool = False,
    norms: bool = False,
) -> TraceRun:
    """Run `command` with the monitor; its output goes to our stderr (stdout is the report's).
    Raises OSError when the command cannot be started."""
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-trace-") as temporary:
        folder = Path(temporary)
        copy_monitor(folder)
        (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        path = record_path or folder / "trace.jsonl"
        path.write_text("", encoding="utf-8")
        env = environment(folder, path.resolve(), steps, overflow, norms)
        completed = subprocess.run(  # noqa: S603 - the user's own command, as they typed it
            list(command), env=env, stdout=stderr_target(), check=False
        )
        records, bad = read_records(path.read_text(encoding="utf-8"))
    return TraceRun(tuple(records), completed.returncode, bad)


def stderr_target() -> int | None:
    """Our stderr's descriptor for the command's stdout, when it has one."""
    try:
        sys.stderr.flush()
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def read_records(text: str) -> tuple[list[dict[str, Any]], int]:
    """The records of a JSON-lines trace; lines that are not a JSON object are counted."""
    records: list[dict[str, Any]] = []
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict) and isinstance(value.get("event"), str):
            records.append(value)
        else:
            bad += 1
    return records, bad
