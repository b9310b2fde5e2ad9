"""A notebook is parsed by the standard JSON parser once: whether its text is plain (no NaN
or Infinity, which the skim leaves to the positional parser) is noted by that parse, not by
parsing the text again (`notebook_json.plain_json`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amp_clipfix.sources import notebook_json
from amp_clipfix.sources.notebook import read_notebook
from amp_clipfix.sources.notebook_json import loads_noting_constants
from amp_clipfix.sources.text import SourceError, decode_source


def notebook_text(output: str) -> str:
    cells = [
        {"cell_type": "code", "source": ["x = 1\n", "y = 2"], "outputs": [], "metadata": {}},
        {"cell_type": "markdown", "source": "# title", "metadata": {}},
        {"cell_type": "code", "source": "z = 3", "metadata": {"score": 0}, "outputs": []},
    ]
    text = json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    return text.replace('"score": 0', f'"score": {output}')


@pytest.mark.parametrize(
    ("constant", "plain"), [("0", True), ("NaN", False), ("Infinity", False), ("-Infinity", False)]
)
def test_the_parse_notes_what_plain_json_says(constant: str, plain: bool) -> None:
    text = notebook_text(constant)
    document, noted = loads_noting_constants(text)
    assert noted == plain == notebook_json.plain_json(text)
    assert json.dumps(document) == json.dumps(json.loads(text))


def parsed_again(text: str) -> bool:
    raise AssertionError("the notebook's JSON parsed again")


def test_a_notebook_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same cells and offsets as before, without plain_json's second parse."""
    source = decode_source(Path("n.ipynb"), notebook_text("0").encode())
    before = read_notebook(source)
    monkeypatch.setattr(notebook_json, "plain_json", parsed_again)
    after = read_notebook(source)
    assert after.cells == before.cells
    assert after.module_text == before.module_text
    assert [cell.text for cell in after.cells] == ["x = 1\ny = 2", "z = 3"]


def test_a_notebook_with_nan_is_refused_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The positional parser reads it (and refuses NaN) as when plain_json said it is not plain."""
    source = decode_source(Path("n.ipynb"), notebook_text("NaN").encode())
    with pytest.raises(SourceError) as before:
        read_notebook(source)
    monkeypatch.setattr(notebook_json, "plain_json", parsed_again)
    with pytest.raises(SourceError) as after:
        read_notebook(source)
    assert str(after.value) == str(before.value)
