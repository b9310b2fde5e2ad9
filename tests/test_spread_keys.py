"""ACF013 reads four keywords of a `Trainer(**cfg)` call; the dict's other entries are not
looked for where they are written (calls.with_spread_keywords' `keys`). On the Lightning tree
its 34 spread Trainer calls looked for 156 entries' places, of which 2 were read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import calls
from amp_clipfix.cli import main

TRAIN = """\
import lightning as L

cfg = {
    "max_epochs": 1,
    "strategy": "fsdp",
    "devices": 2,
    "gradient_clip_val": 1.0,
    "precision": "bf16-mixed",
    "logger": False,
}
trainer = L.Trainer(**cfg)
other = L.Trainer(**{"max_epochs": 2, "strategy": "ddp", "gradient_clip_val": 0.5})
"""


def test_only_the_read_entries_of_a_spread_are_placed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    placed: list[str] = []
    written_place = calls.written_place

    def spied(facts: object, item: object) -> object:
        place = written_place(facts, item)  # type: ignore[arg-type]
        if place is not None:
            placed.append(place[0].code(place[1]).split(":")[0].strip('"'))
        return place

    monkeypatch.setattr(calls, "written_place", spied)
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(tmp_path)]
    report = json.loads(CliRunner().invoke(main, arguments).output)
    found = [(f["code"], [s["line"] for s in f["sites"]]) for f in report["findings"]]
    assert found == [("ACF013", [5, 7, 8])]  # the strategy, the clip value, the precision
    # the first call's four read keys (no algorithm), the second's two; never `max_epochs`,
    # `devices` or `logger`
    assert sorted(placed) == sorted(
        ["strategy", "gradient_clip_val", "precision", "strategy", "gradient_clip_val"]
    )
