"""ACF011 and ACF013 evaluate a Trainer (or Fabric) call's callee only when the call's keywords
can give them a finding (calls.library_calls' `keywords`): ACF011 reads `precision=` and `**`
spreads, ACF013 needs `strategy=` and `gradient_clip_val=` both (written, or from a spread);
the calls are looked for on the lines that write those keywords or `**`. On the Lightning
tree that is 780 evaluations of the 3,848 a run makes. A call they leave out is one neither
rule could report: the reports equal those of the search without `keywords` (every call
on the lines writing a callee's name evaluated) on programs that write the keywords over
several lines, spread them, alias the class, call Fabric, or write none."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import write

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.cli import main
from amp_clipfix.rules import acf011, acf013

PROGRAMS = {
    "plain": """\
import lightning as L

trainer = L.Trainer(max_epochs=1)
other = L.Trainer(devices=2, accelerator="cpu")
""",
    "written": """\
import lightning as L
from lightning import Trainer as T

a = L.Trainer(precision=16, max_epochs=1)
b = T(strategy="fsdp", gradient_clip_val=1.0, precision="bf16-mixed")
c = L.Trainer(strategy="fsdp", max_epochs=1)
d = L.Trainer(gradient_clip_val=0.5, precision="bf16")
e = L.Fabric(precision="16")
""",
    "spread": """\
import lightning as L

cfg = {"precision": 16, "gradient_clip_val": 1.0}
first = L.Trainer(**cfg)
second = L.Trainer(strategy="fsdp", **cfg)
third = L.Trainer(**dict(strategy="fsdp", gradient_clip_val=2.0))
""",
    "lines": """\
import lightning as L

a = L.Trainer(
    max_epochs=1,
    precision=16,
)
b = L.\\
    Trainer(strategy="fsdp",
        **{"gradient_clip_val": 1.0})
c = L.Trainer(\uff50recision="bf16")
d = L.Trainer(accelerator="cpu", **
    dict(precision="16"))
""",
    "aliased": """\
from lightning.pytorch import Trainer as Make


def build(clip):
    return Make(precision="bf16", strategy="fsdp", gradient_clip_val=clip)


build(1.0)
Make(max_epochs=3)
""",
}


def report(root: Path) -> tuple[int, str]:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_report_as_evaluating_every_call(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAMS[name])
    gated = report(tmp_path)
    with monkeypatch.context() as patched:  # the search before: every call's callee evaluated
        patched.setattr(acf011, "PRECISION", None)
        patched.setattr(acf013, "FSDP_CLIP", None)
        every = report(tmp_path)
    assert gated == every
    assert gated[0] == (0 if name == "plain" else 1)


def test_the_written_and_spread_keywords_are_reported(tmp_path: Path) -> None:
    write(tmp_path, "train.py", PROGRAMS["written"] + PROGRAMS["spread"].split("\n", 2)[2])
    code, output = report(tmp_path)
    found = [(finding["code"], finding["line"]) for finding in json.loads(output)["findings"]]
    assert code == 1
    assert found == [  # a, b, d, e; the spread dict's entries (line 9); `third`'s dict
        ("ACF011", 4),
        ("ACF013", 5),
        ("ACF011", 7),
        ("ACF011", 8),
        ("ACF011", 9),
        ("ACF013", 9),
        ("ACF013", 12),
    ]


def test_keywords_written_on_other_lines_than_the_callee_are_read(tmp_path: Path) -> None:
    write(tmp_path, "train.py", PROGRAMS["lines"])
    code, output = report(tmp_path)
    found = [(finding["code"], finding["line"]) for finding in json.loads(output)["findings"]]
    assert code == 1
    assert found == [("ACF011", 5), ("ACF013", 8), ("ACF011", 10), ("ACF011", 12)]


def test_a_call_that_writes_none_of_the_keywords_is_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAMS["plain"] + PROGRAMS["written"].split("\n", 1)[1])
    asked = evaluated_callees(monkeypatch)
    code, _ = report(tmp_path)
    assert code == 1
    assert 3 not in asked and 4 not in asked  # `max_epochs=1`, `devices=2`: no rule reads them
    assert 8 in asked  # `precision=16`: ACF011 reads it


def evaluated_callees(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lines of the callees whose qualified names are evaluated from now on."""
    asked: list[int] = []
    qualified_names = ProjectFacts.qualified_names

    def spied(self: ProjectFacts, file: FileFacts, node: ast.AST) -> frozenset[str]:
        asked.append(node.lineno)  # type: ignore[attr-defined]
        return qualified_names(self, file, node)

    monkeypatch.setattr(ProjectFacts, "qualified_names", spied)
    return asked
