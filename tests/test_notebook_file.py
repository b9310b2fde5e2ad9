"""A notebook read holds its code cells and module, not its file's decoded text (the whole
JSON, outputs included): the text is decoded again from the bytes when asked, the same."""

from __future__ import annotations

import json
from pathlib import Path

from amp_clipfix.sources.notebook import NotebookFile, ReadNotebooks

NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title ✓"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x" * 5000]}],
            "source": ["import torch\n", "print('ﬁt')"],
        },
    ],
}


def test_a_notebook_holds_no_text_of_its_file() -> None:
    data = json.dumps(NOTEBOOK, ensure_ascii=False, indent=1).encode("utf-8")
    reader = ReadNotebooks(1 << 20)
    notebook = reader.read(Path("n.ipynb"), data)
    assert type(notebook.source) is NotebookFile
    assert notebook.source.__dict__["text"] == ""  # nothing held
    assert notebook.source.text == data.decode("utf-8")  # decoded when asked
    assert notebook.module_text == "# amp-clipfix: cell 2\nimport torch\nprint('ﬁt')\n"
    again = reader.read(Path("n.ipynb"), data)
    assert again.source.text == notebook.source.text and again.cells == notebook.cells
