"""A search's list of candidates tests a notebook's code as its searchable text holds it
(search_texts.notebook_code): a warm run, whose searchable texts come from the cache, does
not parse a notebook's JSON again to list it, and its output is a cold run's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_candidate_answers import FIRST, PYPROJECT
from test_incremental import same_as_cold, write

from amp_clipfix.sources.notebook import NotebookSource

# ACF012 searches: its words make candidates
AMP = """import torch

with torch.cuda.amp.autocast():
    pass
"""


def notebook(*cells: str) -> str:
    code = [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells]
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# holds one of ACF012's words (a candidate), no call it reads and no torch: no stage of the
# collection parses it, and ACF012's text test refuses it (never parsed)
REFUSED = notebook("# notes on cuda.amp\n", "print(1)\n")
# a finding of ACF011's in a cell
FOUND = notebook("import lightning as L\n", "%matplotlib inline\nL.Trainer(precision='bf16')\n")


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_first.py", FIRST)
    write(root, "b_refused.ipynb", REFUSED)
    write(root, "c_found.ipynb", FOUND)
    write(root, "d_amp.py", AMP)
    write(root, "pyproject.toml", PYPROJECT)
    return root


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The notebooks whose document was made, run after run (by file name)."""
    names: list[str] = []
    load = NotebookSource.load

    def spied(self: NotebookSource, path: Path, data: bytes) -> object:
        names.append(path.name)
        return load(self, path, data)

    monkeypatch.setattr(NotebookSource, "load", spied)
    yield names


def warm_and_cold(project: Path, loaded: list[str]) -> tuple[bytes, list[str]]:
    """The warm run's output and the notebooks it made documents of; its output (bytes, exit
    code) asserted equal to a cold `--no-cache` run's."""
    loaded.clear()
    warm = amp_clipfix(project, "check", entry=False)
    made = list(loaded)
    assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
    return warm.stdout, made


def test_a_warm_run_lists_a_notebook_without_its_document(project: Path, loaded: list[str]) -> None:
    first = same_as_cold(project)
    assert b"c_found.ipynb:cell 2:2" in first and b"a_first.py:3" in first
    assert b"b_refused.ipynb" not in first
    (project / "a_first.py").write_text(FIRST.replace("16", "'16'"), encoding="utf-8")
    warm, made = warm_and_cold(project, loaded)
    assert b"a_first.py:3" in warm and b"c_found.ipynb:cell 2:2" in warm
    # the searches' lists tested its searchable text; the one ACF011 reads is answered from
    # the earlier entry (its own reads hold: candidate_answers.py), unread
    assert made == []


def test_an_edited_notebook_is_listed_by_its_new_code(project: Path, loaded: list[str]) -> None:
    same_as_cold(project)
    found = notebook("import lightning as L\n", "L.Trainer(precision=16)\n")
    write(project, "b_refused.ipynb", found)
    warm, made = warm_and_cold(project, loaded)
    assert b"b_refused.ipynb:cell 2:1" in warm and "b_refused.ipynb" in made
