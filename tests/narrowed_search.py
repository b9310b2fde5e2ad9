"""A project reported by ACF004's search as it is and by the wider search before one of its
cuts (`widen` patches the cut away): the two must find the same, and the evaluators each run
made tell what the cut no longer asks about (`asked`)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from test_bounded import Counted
from test_clip_tail import report, write


class Compared(NamedTuple):
    findings: str  # the kept search's report, the same as the wider search's
    kept: Counted
    wider: Counted


def compare_searches(
    files: dict[str, str],
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    widen: Callable[[pytest.MonkeyPatch], None],
) -> Compared:
    """`files` written twice under `folder` (`kept/`, `wider/`) and reported by each search;
    the reports (their folder left out) are asserted equal."""
    write(folder / "kept", files)
    write(folder / "wider", files)
    with monkeypatch.context() as patched:
        kept_counted = Counted(patched)
        kept = report(folder / "kept")
    with monkeypatch.context() as patched:
        widen(patched)
        wider_counted = Counted(patched)
        wider = report(folder / "wider")
    assert kept == wider
    return Compared(kept, kept_counted, wider_counted)


def asked(counted: Counted, path: Path, code: str) -> bool:
    """Some evaluator of the run evaluated the expression `code` of the file."""
    for evaluator in counted.evaluators:
        summary = evaluator.summaries.get(path)
        if summary is None:
            continue
        nodes = {id(n) for n in ast.walk(summary.tree) if ast.unparse(n) == code}
        if any(key[0] in nodes for key in evaluator.memo):
            return True
    return False
