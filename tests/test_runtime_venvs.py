"""scripts/runtime_venvs.py: the release venvs the runtime fixtures ask for; when to rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import runtime_venvs


def test_the_fixtures_ask_for_each_release_once() -> None:
    wanted = runtime_venvs.wanted_venvs()
    assert wanted == {
        "lightning-2.0.9.post0": ["lightning==2.0.9.post0", "setuptools>=77.0.3,<81"],
        "lightning-2.4.0": ["lightning==2.4.0"],
        "pytorch-lightning-1.9.5": ["pytorch-lightning==1.9.5", "setuptools>=77.0.3,<81"],
    }


def test_a_new_release_is_a_fixture_folder(tmp_path: Path) -> None:
    case = tmp_path / "fabric_2_2" / "case.json"
    case.parent.mkdir()
    case.write_text(json.dumps({"runtime": ["lightning_fabric==2.2.5"]}))
    assert runtime_venvs.wanted_venvs(tmp_path) == {
        "lightning-fabric-2.2.5": ["lightning_fabric==2.2.5"]
    }


def test_a_venv_is_ready_only_for_the_requirements_it_was_made_for(tmp_path: Path) -> None:
    venv = tmp_path / "lightning-2.4.0"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    assert not runtime_venvs.is_ready("lightning-2.4.0", ["lightning==2.4.0"], tmp_path)
    (venv / runtime_venvs.STAMP).write_text(json.dumps({"requirements": ["lightning==2.4.0"]}))
    assert runtime_venvs.is_ready("lightning-2.4.0", ["lightning==2.4.0"], tmp_path)
    assert not runtime_venvs.is_ready("lightning-2.4.0", ["lightning==2.4.1"], tmp_path)
