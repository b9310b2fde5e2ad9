"""The findings whose edits overlap an earlier finding's wait for the next round of fixes
(fixes/changes.py `overlapping`): that set is sought once per round, not once per finding (a
tree with 249 ACF012 findings in 108 files, icefall, asked it 249 times: 3 of its 11 s)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.fixes import changes

DEPRECATED = "with torch.cuda.amp.autocast():\n    pass\n"


def test_the_waiting_findings_are_sought_once_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text("import torch\n\n" + DEPRECATED * 6, encoding="utf-8")
    asked: list[int] = []
    overlapping = changes.overlapping

    def counted(findings: Sequence[changes.Finding]) -> set[changes.Finding]:
        asked.append(len(findings))
        return overlapping(findings)

    monkeypatch.setattr(changes, "overlapping", counted)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", "-j", "1", "."])
    assert [f["code"] for f in json.loads(result.output)["findings"]] == ["ACF012"] * 6
    assert asked and all(count == 6 for count in asked)
    assert len(asked) < 6  # once a round, whatever the number of findings
