"""A finding in a big tree costs what its project needs: following a method's parameter to its
callers reads the files that can hold those calls, not every file that writes the method's name
(issue 27). Behaviour only: which files the analysis parses, counted at `summarise`, and the
findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from spied import check_counting_parses

from amp_clipfix.analysis.callers import METHOD_CALLER_FILES

LOOP = """\
import torch


class Loop:
    def run(self, scaler, model, optimizer, loss):
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""
MAIN = """\
import torch

from loop import Loop

model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
Loop().run(torch.amp.GradScaler("cuda"), model, optimizer, model(torch.ones(2)).sum())
"""
# Calls a `run` too, of another object: no class of the project is named here.
UNRELATED = """\
import subprocess


def job():
    return subprocess.run(["true"], check=False)
"""


# The instance reaches the method's call only as an argument: the file never names `Loop`.
RUNNER = """\
def go(loop, scaler, model, optimizer, loss):
    loop.run(scaler, model, optimizer, loss)
"""
THROUGH_RUNNER = """\
import torch

from loop import Loop
from runner import go

model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
go(Loop(), torch.amp.GradScaler("cuda"), model, optimizer, model(torch.ones(2)).sum())
"""


def parsed_by_check(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """`check`'s output and the names of the files it parsed with `ast`."""
    code, output, parsed = check_counting_parses(project, monkeypatch)
    assert code == 1, output
    assert output.startswith(
        "loop.py:7:9: ACF004 Gradients scaled by a GradScaler are clipped before"
    ), output
    assert "1 finding " in output
    return output, parsed


def test_a_method_parameter_is_followed_only_into_files_naming_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More files than METHOD_CALLER_FILES write `run`: only those naming `Loop` are read."""
    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    (tmp_path / "main.py").write_text(MAIN, encoding="utf-8")
    for index in range(METHOD_CALLER_FILES + 5):
        (tmp_path / f"unrelated_{index}.py").write_text(UNRELATED, encoding="utf-8")
    _, parsed = parsed_by_check(tmp_path, monkeypatch)
    assert parsed == ["loop.py", "main.py"]


def test_few_files_naming_a_method_are_all_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the bound every file that calls `run` is read: the instance that reaches
    `runner.py` only as an argument still brings its GradScaler to the finding."""
    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    (tmp_path / "main.py").write_text(THROUGH_RUNNER, encoding="utf-8")
    for index in range(3):
        (tmp_path / f"unrelated_{index}.py").write_text(UNRELATED, encoding="utf-8")
    output, parsed = parsed_by_check(tmp_path, monkeypatch)
    assert "  fix (unscale): safe:" in output
    assert "runner.py" in parsed


# Another class's `run`: the file writes the name only where it defines it.
DEFINES_RUN = """\
class Other:
    def run(self):
        return 1
"""
# The call's name and its parenthesis apart: a comment and a line break, or a continuation.
SPLIT_CALLS = {
    "comment": (
        "    return (\n"
        "        loop.run  # the arguments below\n"
        "        (scaler, model, optimizer, loss)\n"
        "    )\n"
    ),
    "continuation": "    loop.run \\\n        (scaler, model, optimizer, loss)\n",
}


@pytest.mark.parametrize("spelling", sorted(SPLIT_CALLS))
def test_only_files_that_can_call_a_method_are_parsed_for_its_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """A file whose text cannot call `run` (its only `run(` is a `def`) is not parsed for
    the callers of `Loop.run`; one whose call is split by a comment or a continuation is, and
    its GradScaler reaches the finding."""
    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    runner = "def go(loop, scaler, model, optimizer, loss):\n" + SPLIT_CALLS[spelling]
    (tmp_path / "runner.py").write_text(runner, encoding="utf-8")
    (tmp_path / "main.py").write_text(THROUGH_RUNNER, encoding="utf-8")
    (tmp_path / "other.py").write_text(DEFINES_RUN, encoding="utf-8")
    output, parsed = parsed_by_check(tmp_path, monkeypatch)
    assert "  fix (unscale): safe:" in output
    assert parsed == ["loop.py", "main.py", "runner.py"]
