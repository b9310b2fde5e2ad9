"""A module-level class or function is reached from another file by importing its name, by
its module's name (`model.Model`), by a string (`getattr(model, "Model")`) or bare after an
`import *`: a file that writes the module's word and the name only in a comment or a docstring
(`model (Model): the model`) can do none of these, so the search for its callers does not
parse it (analysis/name_texts.py `through_module`). The report is the same.

Checked by which files are summarised as the command runs, and by the report: each way in is
still searched, and one that the test dropped would leave the parameter decided at run time."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import same_as_cold
from test_setter_callers import checked

MODEL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self._cfg = cfg

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=self._cfg)
"""
# Each way in: its import, then how the class is called.
TRAINERS = {
    "module": ("import model", "model.Model(True)"),
    "star": ("from model import *", "Model(True)"),
    "string": ("import model", 'getattr(model, "Model")(True)'),
    "name": ("from model import Model", "Model(True)"),
}
TRAIN = (
    "import lightning as L\n\n{}\n\n"
    'L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit({})\n'
)
# The class's `fused=True` found through the call; a way the evaluator does not follow (an
# `import *`, `getattr`) leaves it decided at run time, as it did before the text test.
KNOWN = 'ACF002 L.Trainer(precision="16-mixed") KNOWN'
RUNTIME = "ACF002 torch.optim.AdamW(fused=self._cfg) RUNTIME"
REPORTS = {"module": KNOWN, "name": KNOWN, "star": RUNTIME, "string": RUNTIME}
# The module's word and the class's name, neither written where code can read the class.
NOTES = '''\
def show(model):
    """Print the model.

    Args:
        model (Model): the model to show.
    """
    print(model)  # a Model, or any module
'''


def project(folder: Path, trainer: tuple[str, str]) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN.format(*trainer))
    (folder / "notes.py").write_text(NOTES)
    return folder


@pytest.mark.parametrize("way", sorted(TRAINERS))
def test_each_way_to_a_module_name_is_searched_and_a_docstring_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    found, made = checked(project(tmp_path / "p", TRAINERS[way]), monkeypatch)
    assert found == [REPORTS[way]]
    assert "notes.py" not in made


def test_a_docstring_file_edited_to_call_the_class_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm run after the edit that makes the unread file a caller prints a cold run's
    bytes: its text tests are noted with their results, so an edit that keeps them (an import
    of the module) keeps the answer, and one that changes one (`model.Model(True)`) is seen
    (a test left unnoted failed here)."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", ("import model", "model.Model(False)"))
    before = same_as_cold(root)
    assert b"ACF002" not in before
    notes = root / "notes.py"
    notes.write_text("import model\n\n" + NOTES)
    assert same_as_cold(root) == before
    notes.write_text("import model\n\n" + NOTES + "\n\nmodel.Model(True)\n")
    after = same_as_cold(root)
    assert b"ACF002" in after


# The module's word only inside a longer name, and the class's name as an attribute of another
# module: no way in to `model.Model`.
LONGER = """\
import modelling

KIND = modelling.Model
"""


def test_a_file_holding_the_module_word_inside_a_longer_name_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", TRAINERS["module"])
    (root / "longer.py").write_text(LONGER)
    found, made = checked(root, monkeypatch)
    assert found == [KNOWN]
    assert "longer.py" not in made


def test_a_longer_name_file_edited_to_name_the_module_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole-word test is noted with its result: the edit that makes the file write
    `model` itself (and call the class with a fused optimizer) is seen by a warm run."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", ("import model", "model.Model(False)"))
    (root / "longer.py").write_text(LONGER)
    assert b"ACF002" not in same_as_cold(root)
    (root / "longer.py").write_text(LONGER + "import model\n\nmodel.Model(True)\n")
    assert b"ACF002" in same_as_cold(root)
