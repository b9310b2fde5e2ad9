"""A one-module project and its evaluator, for the tests that ask the evaluator what an
expression holds."""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import Summary, summarise


def one_module(tmp_path: Path, source: str) -> tuple[Evaluator, Summary]:
    """`source` written as `train.py` in `tmp_path`, a fresh evaluator of that project and the
    module's summary."""
    path = tmp_path / "train.py"
    path.write_text(source)
    evaluator = project_evaluator(
        tmp_path, {path: source.encode()}, lambda p: summarise(tmp_path, p, p.read_text())
    )
    summary = evaluator.summary(path)
    assert summary is not None
    return evaluator, summary
