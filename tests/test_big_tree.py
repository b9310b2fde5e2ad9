"""A finding in a big tree costs what its project needs: following a method's parameter to its
callers reads the files that can hold those calls, not every file that writes the method's name
(issue 27). Behaviour only: which files the analysis parses, counted at `summarise`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main

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


def test_a_method_parameter_is_followed_only_into_files_naming_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amp_clipfix.analysis import summary

    (tmp_path / "loop.py").write_text(LOOP, encoding="utf-8")
    (tmp_path / "main.py").write_text(MAIN, encoding="utf-8")
    for index in range(20):
        (tmp_path / f"unrelated_{index}.py").write_text(UNRELATED, encoding="utf-8")
    parsed: list[str] = []
    summarise = summary.summarise

    def counted(root: Path, path: Path, *args: object, **kwargs: object) -> object:
        parsed.append(path.name)
        return summarise(root, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summary, "summarise", counted)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "."])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(
        "loop.py:7:9: ACF004 Gradients scaled by a GradScaler are clipped before"
    ), result.output
    assert "1 finding " in result.output
    assert sorted(set(parsed)) == ["loop.py", "main.py"]
