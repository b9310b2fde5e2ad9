"""Text tests noted as tests, not reads (analysis/text_tests.py, recording.tested): a file the
caller search only tests by its text (does it write the function's name, its module's name,
import the name), and never parses, keeps the queries that tested it through an edit that
gives every test the same result; an edit that changes a result computes them again. Every
warm run prints the bytes of a cold `--no-cache` run."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import (
    base_project,
    computed,
    edit_line,
    reused,
    same_as_cold,
    spied_queries,
    write,
)

# The clip between the scaled backward and the step, with a scaler the callers pass in: the
# search follows `scaler` to the callers of `step`.
LOOP = """import torch


def step(model, optimizer, loss, scaler):
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""
# Calls it with no scaler at all: no finding.
CALLER = """from loop import step


def train(model, optimizer, loss):
    step(model, optimizer, loss, None)
"""
# Writes the name `step` in a comment only: tested by its text, never parsed.
OTHER = """import os


def here():
    return os.getcwd()  # the step is elsewhere
"""
# Names the GradScaler class (so the scaled-gradient search runs), uses no instance.
KINDS = """import torch

KIND = torch.amp.GradScaler
"""
# Calls `step` with a GradScaler: a finding in loop.py.
SCALING = """import torch
from loop import step


def train(model, optimizer, loss):
    step(model, optimizer, loss, torch.amp.GradScaler("cuda"))
"""

asked = pytest.fixture(name="asked")(spied_queries)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = base_project(tmp_path, monkeypatch, "False")
    (root / "scaled.py").unlink()
    write(root, "loop.py", LOOP)
    write(root, "caller.py", CALLER)
    write(root, "other.py", OTHER)
    write(root, "kinds.py", KINDS)
    return root


def test_an_edit_that_keeps_every_text_test_reuses_the_search(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """other.py writes `step` (so the search for the callers of loop.step tests its text) but
    neither imports it nor names its module: it is never parsed. A line added there gives each
    test the same result, so the scaled-gradient search (ACF004) and every query after it are
    reused (they were computed again when a test was a read of the whole file)."""
    first = same_as_cold(project)
    assert b"0 findings" in first
    assert "rule ACF004" in computed(asked)
    asked.clear()
    edit_line("other.py", "import os\n", "import os\n\nEDITED = 1\n")(project)
    assert same_as_cold(project) == first
    assert computed(asked) == [], asked
    assert "rule ACF004" in reused(asked)


def test_an_edit_that_changes_a_text_tests_result_runs_the_search_again(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """other.py starts naming loop.py's module (a comment): now a file that may call
    loop.step, parsed; no call, the same report, computed again. Then it calls `step` with a
    GradScaler: the clip in loop.py is found."""
    first = same_as_cold(project)
    asked.clear()
    edit_line("other.py", "import os\n", "import os  # not the loop\n")(project)
    assert same_as_cold(project) == first
    assert "rule ACF004" in computed(asked)
    asked.clear()
    write(project, "other.py", SCALING)
    after = same_as_cold(project)
    assert b"loop.py:6:5: ACF004 " in after and b"1 finding " in after
    assert "rule ACF004" in computed(asked)
