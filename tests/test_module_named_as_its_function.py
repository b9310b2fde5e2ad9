"""A module whose function has the module's own name (`build.py`'s `build`, `main.py`'s `main`,
`train.py`'s `train`): a file reaches the function through the module only where it writes the
module's name, and a method call `x.build(...)` writes no module (a module object is never
called; were `x` the module, it is written before the dot). So the search for the function's
callers does not parse a file whose every `build` is a method call (`model.train()`,
`tf.test.main()`: 162 files for Tacotron2's `main` in NVIDIA's DeepLearningExamples, their
trees kept to the run's end): analysis/name_texts.py `names_module`. The report is the same.

Checked by which files are summarised as the command runs, and by the report: each way in is
still searched (the parameter's value found through it), a file writing the name with spaces
around the dot is parsed, and a warm run after an edit that makes the unread file name the
module is a cold run's."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import same_as_cold
from test_setter_callers import checked

from amp_clipfix.analysis.text_tests import written_free

BUILD = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self._cfg = cfg

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=self._cfg)


def build(cfg):
    return Model(cfg)
"""
# Each way in to `build.build`: its import, then the call.
WAYS = {
    "module": ("import build", "build.build(True)"),
    "alias": ("import build as factory", "factory.build(True)"),
    "name": ("from build import build", "build(True)"),
}
TRAIN = (
    "import lightning as L\n\n{}\n\n"
    'L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit({})\n'
)
KNOWN = 'ACF002 L.Trainer(precision="16-mixed") KNOWN'
# `build` only as method calls: a builder object's, never the module's.
METHODS = """\
def assemble(builder, parts):
    builder.build(parts)
    return builder.build()
"""


def project(root: Path, way: tuple[str, str], other: str = METHODS) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "build.py").write_text(BUILD)
    (root / "train.py").write_text(TRAIN.format(*way))
    (root / "assemble.py").write_text(other)
    return root


@pytest.mark.parametrize("way", sorted(WAYS))
def test_a_file_writing_the_name_only_as_method_calls_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    found, made = checked(project(tmp_path / "p", WAYS[way]), monkeypatch)
    assert found == [KNOWN]
    assert "assemble.py" not in made


@pytest.mark.parametrize(
    "other",
    [
        "import build\n\nbuild.build(False)\n",  # the module's name before the dot
        "def make(builder):\n    return builder . build (1)\n",  # spaces: parsed to know
        "from pkg import build\n\nbuild.build(False)\n",  # imported under its name
        "FACTORY = build\nFACTORY.build(False)\n",  # the bare name, bound
    ],
    ids=["module", "spaces", "imported", "bound"],
)
def test_a_file_writing_the_name_otherwise_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str
) -> None:
    _, made = checked(project(tmp_path / "p", WAYS["module"], other), monkeypatch)
    assert "assemble.py" in made


def test_a_method_call_file_edited_to_call_the_function_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text test is noted with its result: an edit that keeps it (another method call)
    keeps the answer, one that makes the file name the module (and call the function with a
    fused optimizer) is seen by a warm run."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", ("import build", "build.build(False)"))
    before = same_as_cold(root)
    assert b"ACF002" not in before
    methods = root / "assemble.py"
    methods.write_text(METHODS + "\n\ndef again(builder):\n    return builder.build(1)\n")
    assert same_as_cold(root) == before
    methods.write_text("import build\n\n" + METHODS + "\n\nbuild.build(True)\n")
    assert b"ACF002" in same_as_cold(root)


@pytest.mark.parametrize(
    ("text", "free"),
    [
        (b"model.train()", False),
        (b"tf.test.main()\nx.main(1)", False),
        (b"import train", True),
        (b"train.train()", True),
        (b"pkg.train.train()", True),
        (b"x = pkg.train", True),
        (b'getattr(m, "train")', True),
        (b"x . train (1)", True),
        (b"x.train ()", True),
        (b"def train():", True),
        (b"retrain.x()", False),
        (b"x.trains()", False),
    ],
)
def test_the_free_writing_test_refuses_only_method_calls(text: bytes, free: bool) -> None:
    assert written_free("train", text) is free
