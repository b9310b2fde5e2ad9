"""ACF010 evaluates a Trainer call's callee only when the call writes `amp_backend` or
`amp_level` (either one: calls.Keywords' `any_of`) or spreads `**`: a call writing neither
gives it nothing, whatever it calls. The reports equal those of the search without the filter
(every call on the lines writing a callee's name evaluated) on programs that write one keyword
or both, over several lines, spread them from a dict or `**kwargs` handed on, rename or alias
the Trainer, spell the keyword with a fullwidth letter, or write none."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from test_incremental import write
from test_keyword_gate import evaluated_callees, report

from amp_clipfix.analysis.calls import Keywords
from amp_clipfix.rules import acf010

PROGRAMS = {
    "none": """\
import lightning as L

amp_level = "O2"
trainer = L.Trainer(max_epochs=1)
other = L.Trainer(devices=2, accelerator="cpu")
""",
    "one_or_both": """\
import lightning as L

a = L.Trainer(amp_backend="native", max_epochs=1)
b = L.Trainer(amp_level="O2")
c = L.Trainer(amp_backend="apex", amp_level="O1")
d = L.Trainer(precision=16)
""",
    "renamed": """\
from lightning.pytorch import Trainer as Make
import lightning.pytorch as pl

make = pl.Trainer


def build(level):
    return Make(amp_level=level, max_epochs=1)


build("O1")
make(amp_backend="native")
Make(max_epochs=3)
""",
    "spread": """\
import lightning as L

cfg = {"amp_backend": "native", "max_epochs": 1}
first = L.Trainer(**cfg)
second = L.Trainer(**dict(amp_level="O2"))


def make_trainer(**kwargs):
    return L.Trainer(precision="16-mixed", **kwargs)


trainer = make_trainer(amp_backend="apex", max_epochs=10)
""",
    "lines": """\
import lightning as L

a = L.Trainer(
    max_epochs=1,
    amp_level="O2",
)
b = L.\\
    Trainer(devices=1,
        amp_backend="native")
c = L.Trainer(\uff41mp_backend="native")
d = L.Trainer(accelerator="cpu", **
    dict(amp_level="O1"))
""",
}


def acf010_lines(output: str) -> list[tuple[int, int]]:
    found = json.loads(output)["findings"]
    return [(f["line"], f["column"]) for f in found if f["code"] == "ACF010"]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_report_as_evaluating_every_call(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", PROGRAMS[name])
    gated = report(tmp_path)
    with monkeypatch.context() as patched:  # the search before: every call's callee evaluated
        patched.setattr(acf010, "AMP", None)
        every = report(tmp_path)
    assert gated == every
    assert bool(acf010_lines(gated[1])) is (name != "none")


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("one_or_both", [3, 4, 5]),
        # `make = pl.Trainer; make(...)` (line 12): through the alias (calls.alias_names)
        ("renamed", [8, 12]),
        ("spread", [3, 5, 12]),
        ("lines", [5, 9, 10, 12]),
    ],
)
def test_each_call_writing_either_keyword_is_reported(
    name: str, lines: list[int], tmp_path: Path
) -> None:
    write(tmp_path, "train.py", PROGRAMS[name])
    code, output = report(tmp_path)
    assert code == 1
    assert sorted({line for line, _ in acf010_lines(output)}) == lines


def test_a_call_that_writes_neither_keyword_is_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`amp_level` written as a plain name makes the file one ACF010 searches; its two Trainer
    calls write neither keyword nor `**`, so neither callee is evaluated (both were before)."""
    write(tmp_path, "train.py", PROGRAMS["none"] + 'x = L.Trainer(amp_level="O1")\n')
    asked = evaluated_callees(monkeypatch)
    code, output = report(tmp_path)
    assert code == 1 and [line for line, _ in acf010_lines(output)] == [6]
    assert 4 not in asked and 5 not in asked
    assert 6 in asked


def test_any_of_and_all_of() -> None:
    calls: dict[str, ast.Call] = {}
    for source in ("T(a=1)", "T(b=1)", "T(a=1, b=2)", "T(c=1)", "T(**k)", "T(c=1, **k)"):
        call = ast.parse(source, mode="eval").body
        assert isinstance(call, ast.Call)
        calls[source] = call
    either, both = Keywords("a", "b", any_of=True), Keywords("a", "b")
    assert [s for s, c in calls.items() if either.written(c)] == [
        "T(a=1)",
        "T(b=1)",
        "T(a=1, b=2)",
        "T(**k)",
        "T(c=1, **k)",
    ]
    assert [s for s, c in calls.items() if both.written(c)] == [
        "T(a=1, b=2)",
        "T(**k)",
        "T(c=1, **k)",
    ]
