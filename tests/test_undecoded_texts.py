"""A search's candidate file is tested for its words in its bytes, undecoded, where decoding
could not change them (sources/text.py `decodes_to_itself`, asked by project_resolve's
`text_of`): ASCII without NUL and without a coding cookie. Every candidate of a search was
decoded, encoded back and compared with its bytes before its words were looked for (the
Lightning tree: 193 candidates, about 15 of them parsed by ACF005); a file no search parses is
now never decoded. A file with a cookie, a byte order mark or a byte outside ASCII is decoded
as before, and still found."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from piped import amp_clipfix

from amp_clipfix.analysis import project_resolve
from amp_clipfix.sources.python import PythonSource
from amp_clipfix.sources.text import decode_source, decodes_to_itself

MODULE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

TRAIN = """\
import lightning as L

from module import Model

trainer = L.Trainer(gradient_clip_val=1.0, max_epochs=1)
trainer.fit(Model())
"""

# `gradient_clip_val` in a comment only: a candidate of ACF009's search whose text test
# (no keyword written) refuses it, so no search parses it
NOTES = b"# gradient_clip_val is given on the command line\nVALUE = 1\n"


@pytest.mark.parametrize(
    "data",
    [b"", b"x = 1\n", b"x = 1", b"# a comment\r\nx = 1\r\n", b"\n\n# coding: latin-1\n"],
    ids=["empty", "a line", "no line break", "CRLF", "cookie on line 3"],
)
def test_ascii_without_a_cookie_decodes_to_itself(data: bytes) -> None:
    assert decodes_to_itself(data)
    assert decode_source(Path("m.py"), data).text.encode("utf-8") == data


@pytest.mark.parametrize(
    "data",
    [
        b"x = 1\x00\n",
        b"\xef\xbb\xbfx = 1\n",
        "x = 'café'\n".encode(),
        b"# -*- coding: latin-1 -*-\nx = 1\n",
        b"#!/usr/bin/env python\n# vim: set fileencoding=utf-8 :\nx = 1\n",
        b"# coding: utf-7\nx = '+AGEAYgBj-'\n",
    ],
    ids=["NUL", "byte order mark", "UTF-8 letter", "cookie", "cookie on line 2", "utf-7 cookie"],
)
def test_what_may_decode_otherwise_is_decoded(data: bytes) -> None:
    assert not decodes_to_itself(data)


PIECES = st.sampled_from(
    [
        b"x = 1\n",
        b"# coding: latin-1\n",
        b"# coding: utf-7\n",
        b"coding",
        b"+AGE-",
        b"\xef\xbb\xbf",
        b"\x00",
        b"\xe9",
        "é".encode(),
        b"\r",
        b"\r\n",
        b"'",
        b"\t",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=8).map(b"".join))
def test_undecoded_is_what_decoding_gives(data: bytes) -> None:
    """Where the bytes are taken as they are, decoding gives a text whose UTF-8 is them."""
    if decodes_to_itself(data):
        assert decode_source(Path("m.py"), data).text.encode("utf-8") == data


def project(root: Path, notes: bytes = NOTES) -> Path:
    (root / "module.py").write_text(MODULE)
    (root / "train.py").write_text(TRAIN)
    (root / "notes.py").write_bytes(notes)
    return root


def decoded(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """The files decoded as Python documents in the run, by name."""
    counts: collections.Counter[str] = collections.Counter()
    load = PythonSource.load

    def counted(self: PythonSource, path: Path, data: bytes):  # noqa: ANN202
        counts[Path(path).name] += 1
        return load(self, path, data)

    monkeypatch.setattr(PythonSource, "load", counted)
    return counts


def test_a_candidate_no_search_parses_is_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = decoded(monkeypatch)
    run = amp_clipfix(project(tmp_path), "check", "--no-cache", "--format", "json", entry=False)
    assert '"ACF009"' in run.text
    assert counts["notes.py"] == 0
    assert counts["module.py"] >= 1  # parsed by the searches: decoded for its tree


def test_the_report_is_the_one_every_candidate_decoded_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    undecoded = amp_clipfix(root, "check", "--no-cache", "--format", "json", entry=False)
    monkeypatch.setattr(project_resolve, "decodes_to_itself", lambda data: False)
    every = amp_clipfix(root, "check", "--no-cache", "--format", "json", entry=False)
    assert undecoded == every
    assert '"ACF009"' in undecoded.text


def test_a_file_with_a_cookie_is_decoded_and_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Trainer written in a latin-1 file (a cookie, a letter outside ASCII): decoded, as
    before, and its finding made."""
    root = project(tmp_path)
    (root / "train.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + TRAIN.encode("ascii")
    )
    counts = decoded(monkeypatch)
    run = amp_clipfix(root, "check", "--no-cache", "--format", "json", entry=False)
    assert counts["train.py"] >= 1
    assert '"ACF009"' in run.text
    assert '"path": "train.py"' in run.text


def test_a_file_a_search_parses_is_decoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF009's search reads `train.py` (its document) and parses it (its summary) from one
    decoded text: it was decoded for each (the Lightning tree: 117 decodes of 69 files, 70
    now)."""
    counts = decoded(monkeypatch)
    run = amp_clipfix(project(tmp_path), "check", "--no-cache", "--format", "json", entry=False)
    assert '"ACF009"' in run.text
    assert counts["train.py"] == 1


def test_a_file_with_a_cookie_is_parsed_from_its_decoded_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary a search parses is made of the document's text, the file's decoded one:
    a latin-1 file's finding lies where it does when each is decoded on its own."""
    root = project(tmp_path)
    (root / "train.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nNOTE = 'caf\xe9 \xe0 la cr\xe8me'\n" + TRAIN.encode("ascii")
    )
    counts = decoded(monkeypatch)
    run = amp_clipfix(root, "check", "--no-cache", "--format", "json", entry=False)
    assert counts["train.py"] == 1
    assert '"path": "train.py"' in run.text
    assert '"line": 7' in run.text
