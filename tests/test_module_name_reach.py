"""Many modules of one name (a `model.py` in each of several folders), each defining a class
of one name: the search for each class's callers asks of every file naming the class whether
it can reach it (an import of the name, or the module's name: analysis/name_texts.py
`may_name_from`). Those text tests depend on the file, the module's name and the class's name
only, so each is made once, whichever module asks; the report is the same, and a warm run
after an edit that makes another file a caller is a cold run's."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from test_incremental import same_as_cold
from test_module_callers import MODEL, NOTES, TRAIN
from test_setter_callers import checked

from amp_clipfix.analysis.name_texts import NameTexts

FOLDERS = ("a", "b", "c")
KNOWN = 'ACF002 L.Trainer(precision="16-mixed") KNOWN'


def project(root: Path, argument: str = "True") -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for folder in FOLDERS:
        (root / folder).mkdir()
        (root / folder / "model.py").write_text(MODEL)
        call = f"model.Model({argument})"
        (root / folder / "train.py").write_text(TRAIN.format("import model", call))
        (root / folder / "notes.py").write_text(NOTES)
    return root


def test_each_file_is_tested_once_per_module_name_and_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: Counter[tuple[str, bytes, bytes]] = Counter()
    original = NameTexts.through_module

    def counted(self: NameTexts, path: Path, module_word: bytes, word: bytes) -> bool:
        asked[(str(path), module_word, word)] += 1
        return original(self, path, module_word, word)

    monkeypatch.setattr(NameTexts, "through_module", counted)
    found, _ = checked(project(tmp_path / "p"), monkeypatch)
    assert found == [KNOWN] * len(FOLDERS)
    # every train.py reaches each Model through `model`: asked by each of the other modules
    trains = {key for key in asked if key[0].endswith("train.py") and key[2] == b"Model"}
    assert len(trains) == len(FOLDERS)
    assert set(asked.values()) == {1}


def test_a_warm_run_after_a_file_starts_calling_is_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests are noted with their results when first made: an edit to a file that named
    the class in prose only is seen by a warm run (its text tests changed)."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", "False")
    assert b"ACF002" not in same_as_cold(root)
    notes = root / "b" / "notes.py"
    notes.write_text("import model\n\n" + NOTES + "\n\nmodel.Model(True)\n")
    assert b"ACF002" in same_as_cold(root)
