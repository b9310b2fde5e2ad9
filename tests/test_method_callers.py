"""Another file names a method only as an attribute (`model.set_fused(True)`) or in a string
(`getattr(model, "set_fused")`): a file that writes the method's name only in a comment or a
docstring (`set_fused (see above)`) holds neither, so the search for the method's callers does
not parse it (analysis/callers.py `search_callers`, name_texts.py `referenced`). The report is
the same; a warm run after an edit that makes the file a caller prints a cold run's bytes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_incremental import same_as_cold
from test_setter_callers import checked

from amp_clipfix.analysis.text_tests import text_reference

MODEL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def set_fused(self, fused):
        self._fused = fused

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=self._fused)
"""
# Each way the method is called from another file.
CALLS = {"attribute": "model.set_fused(True)", "string": 'getattr(model, "set_fused")(True)'}
TRAIN = """\
import lightning as L

from model import Model

model = Model()
{}
L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(model)
"""
# The class used, the method's name only in a comment.
NOTES = """\
from model import Model


def show(model: Model):
    print(model)  # set_fused (see above) decides it
"""
# A call the evaluator follows decides `fused` here; `getattr` is not followed (at run time).
REPORTS = {
    "attribute": "ACF002 torch.optim.AdamW(fused=self._fused), decided here KNOWN",
    "string": "ACF002 torch.optim.AdamW(fused=self._fused) RUNTIME",
}


def project(folder: Path, call: str) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN.format(call))
    (folder / "notes.py").write_text(NOTES)
    return folder


@pytest.mark.parametrize("way", sorted(CALLS))
def test_each_way_to_a_method_is_searched_and_a_comment_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    found, made = checked(project(tmp_path / "p", CALLS[way]), monkeypatch)
    assert found == [REPORTS[way]]
    assert "notes.py" not in made


def test_a_comment_file_edited_to_call_the_method_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text test is noted with its result: an edit that keeps it keeps the answer, one
    that makes the file a caller is seen (a test left unnoted failed here)."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", "model.set_fused(False)")
    before = same_as_cold(root)
    assert b"ACF002" not in before
    notes = root / "notes.py"
    notes.write_text(NOTES + "\n\nshown = 1\n")
    assert same_as_cold(root) == before
    notes.write_text(NOTES + "\n\nModel().set_fused(True)\n")
    assert b"ACF002" in same_as_cold(root)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b"(model.  # why\n    cfg)(None)\n", True),  # a comment between the dot and the name
        (b"(model.\\\n cfg)\n", True),
        (b"x = 1  # a note\ncfg = 2\n", False),
        (b"model.b  # see model.\ncfg\n", False),  # the comment's dot is no attribute's
        (b"# backward cfg\n", False),
    ],
)
def test_an_attribute_is_found_across_a_comment(text: bytes, named: bool) -> None:
    """text_tests.text_reference, which lets the caller search skip a file, finds `.cfg`
    wherever Python reads one: spaces, line breaks, backslashes and comments between."""
    assert text_reference(b"cfg", text) is named
    if named:
        tree = ast.parse(text)
        assert any(isinstance(n, ast.Attribute) and n.attr == "cfg" for n in ast.walk(tree))
