"""Python reads a name written in letters NFKC folds to ASCII as that name (`Ｍodel` is
`Model`): the caller search's text tests, made before a file is parsed, read each text as
Python reads its names (`prefilter.python_text`), so a file calling a function in such
letters is found as the parser would find it (analysis/recording.py `passes`,
`python_texts`; the word index, relevance.text_words).

Checked by the report: a folded caller's argument decides the finding as an ASCII one's does,
and a warm run after an edit to a folded caller prints a cold run's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import same_as_cold
from test_module_callers import KNOWN, MODEL, TRAIN
from test_setter_callers import checked

from amp_clipfix.analysis.recording import holds, passes, python_texts
from amp_clipfix.analysis.relevance import text_words

FOLDED_M = "\uff2d"  # FULLWIDTH LATIN CAPITAL LETTER M: NFKC gives "M"
CALLERS = {
    "name": ("from model import {M}odel", "{M}odel(True)"),
    "module": ("import model", "model.{M}odel(True)"),
}


def project(folder: Path, **trains: tuple[str, str]) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL)
    for name, (imported, called) in trains.items():
        text = TRAIN.format(imported, called).replace("{M}", FOLDED_M)
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("way", sorted(CALLERS))
def test_a_caller_in_folded_letters_decides_the_finding_as_an_ascii_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    folded, _ = checked(project(tmp_path / "folded", train=CALLERS[way]), monkeypatch)
    imported, called = CALLERS[way]
    ascii_spelling = (imported.replace("{M}", "M"), called.replace("{M}", "M"))
    plain, _ = checked(project(tmp_path / "plain", train=ascii_spelling), monkeypatch)
    assert folded == plain == [KNOWN]


def test_a_folded_caller_beside_an_ascii_one_is_not_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Model(False)` in one file and `Ｍodel(True)` in another: the fused optimizer is built
    through the second; a search that read only ASCII spellings found no fused value at all."""
    root = project(
        tmp_path / "p",
        train=("from model import Model", "Model(False)"),
        train2=("from model import {M}odel", "{M}odel(True)"),
    )
    found, _ = checked(root, monkeypatch)
    assert found == [KNOWN, KNOWN]  # each Trainer clips the folded caller's fused optimizer


def test_an_edit_to_a_folded_caller_is_seen_by_a_warm_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", train=("from model import {M}odel", "{M}odel(False)"))
    assert b"ACF002" not in same_as_cold(root)
    train = root / "train.py"
    train.write_text(train.read_text(encoding="utf-8").replace("(False)", "(True)"), "utf-8")
    assert b"ACF002" in same_as_cold(root)


def test_a_text_test_reads_the_folded_spelling() -> None:
    folded = f"x.{FOLDED_M}odel(cfg)  # ©".encode()
    assert passes((holds(b"Model"),), folded)
    assert python_texts({Path("a.py"): folded})[Path("a.py")].startswith(b"x.Model(")
    assert b"Model" in text_words(folded)
    stable = "x.Model  # © — as written".encode()  # names read as written: the same bytes
    assert python_texts({Path("a.py"): stable})[Path("a.py")] is stable
