"""Where each cell's `"source"` value lies in a notebook's text: the skim a plain JSON text gets
gives the positional parser's offsets (and its messages where it refuses), and a run reads each
notebook once (branch nemo2, issue 35)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.sources.notebook_json import PositionalJson, source_value_offsets
from amp_clipfix.sources.text import SourceError


def positional(text: str) -> list[tuple[int, int]]:
    """The positional parser's offsets (what source_value_offsets gave before the skim)."""
    root = PositionalJson(text).parse().value
    assert isinstance(root, dict)
    cells = root["cells"].value
    assert isinstance(cells, list)
    return [
        (cell.value["source"].start, cell.value["source"].end)
        if isinstance(cell.value, dict) and "source" in cell.value
        else (-1, -1)
        for cell in cells
    ]


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
CELL = st.dictionaries(st.sampled_from(["source", "outputs", "cell_type", "s\\u006furce"]), VALUES)


def spelled(value: object, indent: int | None, ascii_only: bool) -> str:
    # `s\u006furce` written as is: the key `source` spelled with an escape
    return json.dumps(value, indent=indent, ensure_ascii=ascii_only).replace(
        "s\\\\u006furce", "s\\u006furce"
    )


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(CELL | VALUES, max_size=5),
    extra=st.dictionaries(st.text(max_size=4), VALUES, max_size=3),
    indent=st.sampled_from([None, 0, 1, 2]),
    ascii_only=st.booleans(),
)
def test_the_skim_finds_what_the_positional_parser_finds(
    cells: list[object], extra: dict[str, object], indent: int | None, ascii_only: bool
) -> None:
    text = spelled({**extra, "cells": cells, "nbformat": 4}, indent, ascii_only)
    assert source_value_offsets(text) == positional(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"cells": [{"source": "a"}, 3, [], {"source": ["x\\n", "y"], "source": "z"}]}',
        '{"cells": [], "cells": [{"outputs": [{"text": "[{]\\"}"}], "source": []}]}',
        '\t\r\n{ "metadata" : {"a": [[{}], {"b": [1, -2.5e+3, true, null]}]} ,\r\n'
        ' "cells" : [ { "source" : [ "\\u00fc\\\\" ] , "outputs" : [ ] } ] }',
    ],
)
def test_duplicate_keys_brackets_in_strings_and_spacing(text: str) -> None:
    assert source_value_offsets(text) == positional(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cells": [{"outputs": [NaN]}]}', "unexpected JSON at offset 24"),  # json reads NaN
        ('{"cells": {"source": "a"}}', "no cell list"),
        ('[{"cells": []}]', "the notebook is not a JSON object"),
        ('{"cells": [{"source": "a"}]', "string index out of range"),
        ('{"nbformat": 4}', "'cells'"),
    ],
)
def test_a_text_the_skim_refuses_gets_the_positional_parsers_message(
    text: str, message: str
) -> None:
    with pytest.raises(SourceError) as raised:
        source_value_offsets(text)
    assert str(raised.value) == f"not a valid notebook: {message}"


def test_a_run_reads_each_notebook_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read for its searchable text, then loaded for its findings: one read of the bytes."""
    from amp_clipfix.sources import notebook

    reads: list[Path] = []
    real = notebook.read_notebook

    def counting(source):  # noqa: ANN001, ANN202
        reads.append(source.path)
        return real(source)

    monkeypatch.setattr(notebook, "read_notebook", counting)
    code = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": code}
    document = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(document))
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert result.errors == ()
    assert [(f.code, f.sites[0].path.name) for f in result.findings] == [("ACF012", "train.ipynb")]
    assert reads == [tmp_path / "train.ipynb"]


def test_a_notebook_whose_bytes_changed_is_read_again_and_old_ones_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amp_clipfix.sources import notebook

    reads: list[str] = []
    real = notebook.read_notebook

    def counting(source):  # noqa: ANN001, ANN202
        reads.append(source.path.name)
        return real(source)

    monkeypatch.setattr(notebook, "read_notebook", counting)

    def data(code: str) -> bytes:
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": code}
        return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}).encode()

    kept = notebook.ReadNotebooks(limit=2 * len(data("a = 1\n")))
    a, b, c = (tmp_path / f"{name}.ipynb" for name in "abc")
    assert kept.read(a, data("a = 1\n")).cells[0].text == "a = 1\n"
    assert kept.read(a, data("a = 2\n")).cells[0].text == "a = 2\n"  # new bytes: read
    kept.read(a, data("a = 2\n"))
    kept.read(b, data("b = 1\n"))
    kept.read(c, data("c = 1\n"))  # over the limit: a, the oldest, leaves
    kept.read(a, data("a = 2\n"))
    assert reads == ["a.ipynb", "a.ipynb", "b.ipynb", "c.ipynb", "a.ipynb"]
    assert sorted(path.name for path in kept.kept) == ["a.ipynb", "c.ipynb"]
