"""Bounded work: what the analysis does grows with the program, not with the paths through it.

No timings: each test counts something deterministic (values the evaluator hands on,
evaluations it performs, nodes whose positions are computed) and checks that it stays small or
grows linearly when the input grows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.analysis import evaluate, frame
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
        return sum(frame.BUDGET - evaluator.budget for evaluator in self.evaluators)


def analyse(folder: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Counted, list]:
    folder.mkdir()
    (folder / "train.py").write_text(source)
    counted = Counted(monkeypatch)
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    return counted, [(finding.code, finding.confidence.value) for finding in result.findings]


def test_wrappers_calling_the_next_in_two_branches_cost_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The precision passed through 10 and 20 wrappers: one value reached along 2**n paths is
    one value (it was a list of 2**n, doubling time and memory at every wrapper)."""
    small, small_findings = analyse(tmp_path / "ten", wrapper_chain(10), monkeypatch)
    large, large_findings = analyse(tmp_path / "twenty", wrapper_chain(20), monkeypatch)
    assert small_findings == large_findings
    # The clip's receiver is only named `fabric`; its value is not followed through 10 wrappers
    # (the depth bound), and a name alone gives a review finding, never a certain ACF001.
    assert large_findings == [("ACF001", "review")]
    assert small.longest <= 4 and large.longest <= 4
    assert large.evaluations() <= 2.5 * small.evaluations()


def test_many_calls_through_a_long_chain_stay_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 wrappers and 50 calls (over 5 GB before): a list holds at most one value per call."""
    counted, findings = analyse(tmp_path / "many", wrapper_chain(40, calls=50), monkeypatch)
    assert findings == [("ACF001", "review")]  # one precision, one (review) finding
    assert counted.longest <= 50 + 4


def large_module(statements: int, newline: str = "\n") -> str:
    """Top-level data around one Trainer finding: the shape of bench/projects.py's module."""
    head = [
        '"""A generated module."""',
        "import torch",
        "from lightning.pytorch import LightningModule, Trainer",
        "",
        "",
        "class Model(LightningModule):",
        "    def configure_optimizers(self):",
        "        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)",
        "",
    ]
    data = []
    for index in range(statements):
        data.append(
            [
                f"value_{index} = {index}",
                f"name_{index} = 'text {index}'  # a comment",
                f"table_{index} = {{\n    'a': {index},\n    'b': [1, 2],\n}}",
                f"listed_{index} = [value_{index}, {index}]",
            ][index % 4]
        )
    tail = ["", "trainer = Trainer(precision='16-mixed', gradient_clip_val=1.0)", ""]
    tail += ["trainer.fit(Model())", ""]
    return newline.join(head + data + tail)


def fixed(  # noqa: ANN201
    folder: Path,
    source: str,
    monkeypatch: pytest.MonkeyPatch,
    whole: bool = False,
    strategy: Strategy = Strategy.AUTO,
):
    """The run's change and every text libcst parsed (with `whole`: the module not elided)."""
    from amp_clipfix.fixes import elide
    from amp_clipfix.sources import python

    folder.mkdir()
    (folder / "module.py").write_bytes(source.encode())
    parsed: list[str] = []
    real = python.parse_libcst

    def counting(text: str):  # noqa: ANN202
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(python, "parse_libcst", counting)
    if whole:
        monkeypatch.setattr(elide, "elide", lambda *arguments: None)
    result = run([folder], Options(strategy, DEFAULT_TARGET, fix=True, with_edits=True))
    monkeypatch.undo()
    assert result.errors == ()
    (change,) = result.changes
    return change.new_data, parsed, result


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_large_module_gives_libcst_only_what_the_fix_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: str
) -> None:
    """JSON, SARIF and `apply` fix the module: libcst sees a text whose size does not grow with
    the module's data, and the bytes are those of fixing the whole module."""
    small = large_module(400, newline)
    large = large_module(4000, newline)
    small_data, small_parsed, _ = fixed(tmp_path / "small", small, monkeypatch)
    large_data, large_parsed, result = fixed(tmp_path / "large", large, monkeypatch)
    whole_data, whole_parsed, _ = fixed(tmp_path / "whole", large, monkeypatch, whole=True)
    assert large_data == whole_data  # byte for byte what the whole module's fix gives
    assert len(whole_parsed[0]) == len(large)
    assert len(large_parsed) == len(small_parsed) == 1
    # Beyond its line breaks (one string token), the text libcst reads does not grow.
    seen = [
        len(text.replace("\r", "").replace("\n", "")) for text in (*large_parsed, *small_parsed)
    ]
    assert seen[0] == seen[1] < len(small) / 10
    assert large_parsed[0].count(newline) == large.count(newline)  # lines keep their numbers
    assert result.edits and all(edits for edits in result.edits.values())


def test_data_naming_what_the_fix_touches_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data that binds a name the kept code writes (`Trainer = ...` would change what the call
    means), or that reads a helper the fix inserts, stays in what libcst sees."""
    source = large_module(400).replace(
        "value_8 = 8", "Trainer = Trainer\nhelper = clip_module_gradients_unscaled"
    )
    data, parsed, _ = fixed(tmp_path / "kept", source, monkeypatch)
    whole, _, _ = fixed(tmp_path / "whole", source, monkeypatch, whole=True)
    assert data == whole
    assert "Trainer = Trainer\n" in parsed[0]
    assert "helper = clip_module_gradients_unscaled\n" in parsed[0]
