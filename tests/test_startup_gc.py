"""The command collects garbage seldom from its start (run_notes.few_garbage_collections, asked
by the entry point before it imports the command line): with Python's default thresholds the
imports of a run (~100-290 modules) made ~19 collections before the command line turned them
down, ~1% of a small project's run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_startup import project

SRC = Path(__file__).resolve().parent.parent / "src"

# Runs the command as `python -m amp_clipfix` does, saying on stderr when a collection happens
# once the entry point has imported the command line.
WATCHED_RUN = """
import gc, runpy, sys
def told(phase, info):
    if phase == "stop" and "amp_clipfix.quick" in sys.modules:
        sys.stderr.write(f"collected generation {info['generation']}\\n")
gc.callbacks.append(told)
sys.argv = ["amp-clipfix", *sys.argv[1:]]
runpy.run_module("amp_clipfix", run_name="__main__", alter_sys=True)
"""


def collections_in(root: Path, *arguments: str) -> list[str]:
    environment = {**os.environ, "PYTHONPATH": str(SRC), "AMP_CLIPFIX_NO_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WATCHED_RUN, *arguments],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if line.startswith("collected")]


def test_a_check_collects_nothing_once_the_command_line_is_imported(tmp_path: Path) -> None:
    root = project(tmp_path, fused=True)  # a finding: the analysis and the rules are imported
    assert collections_in(root, "check", "--format", "json", ".") == []
