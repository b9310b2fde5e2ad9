"""scripts/corpus.py's CPU time and bench/projects.py's module and summary helpers.

No timing asserts: a busy loop runs until *its own* CPU clock passes a mark, so the CPU time
`measure` reports must be at least that mark however loaded the machine is.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from pathlib import Path

import corpus

BENCH = Path(__file__).resolve().parent.parent / "bench"
BUSY_SECONDS = 0.3  # CPU seconds each busy loop burns, by its own process clock
BUSY_LOOP = f"import time\nwhile time.process_time() < {BUSY_SECONDS}:\n    pass\n"


def load_projects():
    spec = importlib.util.spec_from_file_location("bench_projects", BENCH / "projects.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_cpu_time_of_a_busy_process_is_counted(tmp_path: Path) -> None:
    measurement = corpus.measure([sys.executable, "-c", BUSY_LOOP], tmp_path)
    assert measurement.returncode == 0
    assert measurement.cpu_seconds >= BUSY_SECONDS * 0.95  # rusage ticks vs the process clock


def test_the_cpu_time_of_a_reaped_child_is_included(tmp_path: Path) -> None:
    """The parent only waits: the CPU can only come from the child it started and reaped."""
    parent = textwrap.dedent(
        f"""\
        import subprocess, sys
        subprocess.run([sys.executable, "-c", {BUSY_LOOP!r}], check=True)
        """
    )
    measurement = corpus.measure([sys.executable, "-c", parent], tmp_path)
    assert measurement.returncode == 0
    assert measurement.cpu_seconds >= BUSY_SECONDS * 0.95


def test_the_generated_module_has_the_size_and_one_training_setup(tmp_path: Path) -> None:
    projects = load_projects()
    path = tmp_path / "module.py"
    lines = projects.write_module(path, 50_000)
    text = path.read_text()
    assert 50_000 <= len(text) < 50_200
    assert lines == text.count("\n")
    ast.parse(text)
    assert text.count("fused=True") == 1
    assert text.count("Trainer(precision=") == 1
    assert text.rstrip().endswith("trainer.fit(Model())")


def test_findings_and_files_are_read_from_the_text_report() -> None:
    projects = load_projects()
    output = (
        "src/model.py:21:76: ACF002 Trainer clips gradients of a fused optimizer\n"
        "  fused optimizer: src/model.py:21 torch.optim.AdamW(fused=True)\n"
        "1 finding (1 fixable with --strategy auto) in 1 file (643 files checked); assumed "
        "lightning 2.6.6.\n"
    )
    assert projects.reported(output) == (["ACF002"], 643)
    assert projects.reported("0 findings (0 fixable) in 1 file checked; assumed x.\n") == ([], 1)
    assert projects.reported("Traceback (most recent call last):\n") == ([], None)
