"""Bounded work: what the analysis does grows with the program, not with the paths through it.

No timings: each test counts something deterministic (values the evaluator hands on,
evaluations it performs, nodes whose positions are computed) and checks that it stays small or
grows linearly when the input grows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.analysis import evaluate
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET


def wrapper_chain(wrappers: int, calls: int = 1) -> str:
    """Fabric factories, each calling the next in two branches with `**kw` passed on."""
    lines = ["import torch", "import lightning as L", "", "", "def make_0(**kw):"]
    lines += ["    return L.Fabric(**kw)", ""]
    for index in range(1, wrappers + 1):
        lines += [
            f"def make_{index}(flag=False, **kw):",
            "    if flag:",
            f"        return make_{index - 1}(**kw)",
            f"    return make_{index - 1}(flag=True, **kw)",
            "",
        ]
    for index in range(calls):
        lines += [
            f"def train_{index}(model):",
            f"    fabric = make_{wrappers}(precision='16-mixed')",
            "    optimizer = torch.optim.AdamW(model.parameters(), fused=True)",
            "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
            "",
        ]
    return "\n".join(lines)


class Counted:
    """The evaluators a run makes, and the longest list of values `force` handed on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.evaluators: list[evaluate.Evaluator] = []
        self.longest = 0
        made, forced = evaluate.Evaluator.__init__, evaluate.Evaluator.force
        counted = self

        def init(self, *arguments, **keywords):  # noqa: ANN001, ANN002, ANN003, ANN202
            made(self, *arguments, **keywords)
            counted.evaluators.append(self)

        def force(self, items):  # noqa: ANN001, ANN202
            values = forced(self, items)
            counted.longest = max(counted.longest, len(values))
            return values

        monkeypatch.setattr(evaluate.Evaluator, "__init__", init)
        monkeypatch.setattr(evaluate.Evaluator, "force", force)

    def evaluations(self) -> int:
        return sum(evaluate.BUDGET - evaluator.budget for evaluator in self.evaluators)


def analyse(folder: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Counted, list]:
    folder.mkdir()
    (folder / "train.py").write_text(source)
    counted = Counted(monkeypatch)
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    return counted, [(finding.code, finding.primary.span.line) for finding in result.findings]


def test_wrappers_calling_the_next_in_two_branches_cost_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The precision passed through 10 and 20 wrappers: one value reached along 2**n paths is
    one value (it was a list of 2**n, doubling time and memory at every wrapper)."""
    small, small_findings = analyse(tmp_path / "ten", wrapper_chain(10), monkeypatch)
    large, large_findings = analyse(tmp_path / "twenty", wrapper_chain(20), monkeypatch)
    assert [code for code, _ in small_findings] == [code for code, _ in large_findings]
    # The clip's receiver is only named `fabric`; its value is not followed through 10 wrappers
    # (the depth bound), and a name alone gives a review finding, never a certain ACF001.
    assert [code for code, _ in large_findings] == ["ACF003"]
    assert small.longest <= 4 and large.longest <= 4
    assert large.evaluations() <= 2.5 * small.evaluations()


def test_many_calls_through_a_long_chain_stay_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 wrappers and 50 calls (over 5 GB before): a list holds at most one value per call."""
    counted, findings = analyse(tmp_path / "many", wrapper_chain(40, calls=50), monkeypatch)
    assert [code for code, _ in findings] == ["ACF003"]  # one precision, one (review) finding
    assert counted.longest <= 50 + 4
