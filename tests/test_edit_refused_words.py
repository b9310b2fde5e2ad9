"""A search's own text test, noted with its words (recording.Candidates.words, session 26): a
changed file that holds a search's word counts for that search's query only where the test it
was asked with now passes (shape_texts.MayWrite, calls.CallTest). A file the test still refuses
was not read and gives the search nothing, so an edit to it reuses every query; on 60f2b40 it
computed the search and every query after it (NeMo: 72 such files, ~1.7 s a warm run). Each
warm run prints a cold run's bytes, the edits that make the test pass included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from piped import Run, amp_clipfix
from test_incremental import PYPROJECT, computed, edit_line, reused, same_as_cold, spied_queries
from test_manual_clips import MODEL

from amp_clipfix.analysis.calls import CallTest, Keywords
from amp_clipfix.analysis.query_checks import asked_again
from amp_clipfix.analysis.shape_texts import (
    CLIP_VAL_KEYWORD,
    PLAIN_BACKWARD_IN_CLASS,
    PLAIN_BACKWARD_WRAPPER,
)

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

# Holds ACF009's word, not as a keyword argument: its text test refuses it.
READS_CLIP_VAL = """\
from model import Model


def show(trainer):
    return trainer.gradient_clip_val
"""

CLIP_VAL_TRAINER = """\
import lightning as L

from model import Model

trainer = L.Trainer(gradient_clip_val=1.0)
trainer.fit(Model())
"""

# Holds ACF011's word `"16"`, names no Trainer nor Lightning: CallTest refuses it.
SIXTEEN = """\
BITS = "16"


def width():
    return int(BITS)
"""

TRAIN = """\
import lightning as L

trainer = L.Trainer(precision="16", max_epochs=1)
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT.format(pin=">=2.0"), encoding="utf-8")
    yield root


def test_an_edit_to_a_file_acf009s_test_refuses_reuses_its_query(
    root: Path, asked: list[tuple[str, bool]]
) -> None:
    (root / "model.py").write_text(MODEL.format(imports="", clip="pass"), encoding="utf-8")
    (root / "notes.py").write_text(READS_CLIP_VAL, encoding="utf-8")
    first = same_as_cold(root)
    assert b"ACF009" not in first
    asked.clear()
    edit_line("notes.py", "def show(", "_edited = 1\n\n\ndef show(")(root)
    assert same_as_cold(root) == first
    assert "rule ACF009" in reused(asked) and not computed(asked), asked
    asked.clear()
    (root / "notes.py").write_text(CLIP_VAL_TRAINER, encoding="utf-8")
    assert b"notes.py:5:21: ACF009" in same_as_cold(root)
    assert "rule ACF009" in computed(asked), asked


def test_an_edit_to_a_file_acf011s_call_test_refuses_reuses_its_query(
    root: Path, asked: list[tuple[str, bool]]
) -> None:
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "bits.py").write_text(SIXTEEN, encoding="utf-8")
    first = same_as_cold(root)
    assert b"train.py:3:21: ACF011" in first and b"bits.py" not in first
    asked.clear()
    edit_line("bits.py", "def width(", "_edited = 1\n\n\ndef width(")(root)
    assert same_as_cold(root) == first
    assert "rule ACF011" in reused(asked) and not computed(asked), asked
    asked.clear()
    edit_line(
        "bits.py", 'BITS = "16"', 'import lightning as L\n\nquick = L.Trainer(precision="16")'
    )(root)
    assert b"bits.py:3:19: ACF011" in same_as_cold(root)
    assert "rule ACF011" in computed(asked), asked


def test_a_refused_file_that_does_not_parse_is_reported_once_a_question_would_read_it(
    root: Path,
) -> None:
    """The settle notes each question's words with its test too: a file holding `"16"` that
    does not parse is no error while CallTest refuses it, and one once it may write a Trainer
    call with `precision=`."""
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "bits.py").write_text(SIXTEEN, encoding="utf-8")
    first = checked(root)
    edit_line("bits.py", "def width():", "def width(:")(root)
    assert checked(root) == first
    call = 'from lightning import Trainer\nBITS = "16"\nquick = Trainer(precision=BITS)'
    edit_line("bits.py", 'BITS = "16"', call)(root)
    assert b"bits.py:6:11: error: cannot parse" in checked(root).stderr
    edit_line("bits.py", call, 'BITS = "16"')(root)
    assert checked(root) == first


def checked(root: Path) -> Run:
    """A warm `check .`, asserted the same as a cold one (what it prints, both streams, and its
    exit code)."""
    warm = amp_clipfix(root, "check", entry=False)
    assert warm == amp_clipfix(root, "check", "--no-cache", entry=False)
    return warm


@pytest.mark.parametrize(
    "test",
    [
        CLIP_VAL_KEYWORD,
        PLAIN_BACKWARD_IN_CLASS,
        PLAIN_BACKWARD_WRAPPER,
        CallTest(Path("/p"), {"lightning.Trainer", "lightning.pytorch.Trainer"}),
        CallTest(Path("/p"), {"lightning.Trainer"}, Keywords("precision")),
        CallTest(Path("/p"), {"lightning.Fabric"}, Keywords("a", "b", any_of=True)),
    ],
    ids=["clip_val", "backward_in_class", "backward_wrapper", "trainer", "precision", "any_of"],
)
@pytest.mark.parametrize(
    "text",
    [
        b"x = 1\n",
        b"Trainer(gradient_clip_val=1.0)\n",
        b"trainer.gradient_clip_val\n",
        b"class M:\n    def f(self):\n        loss.backward()\n",
        b"def deco(f):\n    def wrapper():\n        loss.backward()\n    return wrapper\n",
        b"import lightning as L\nL.Trainer(precision=16)\n",
        b"from lightning import Fabric\nFabric(a=1, **k)\n",
        "ｇradient_clip_val = 1\n".encode(),
    ],
    ids=range(8),
)
def test_a_noted_test_asked_again_gives_the_tests_own_answer(test: object, text: bytes) -> None:
    """What a later run asks of a changed file (the noted condition) is the test itself."""
    path = Path("/p/pkg/m.py")
    assert asked_again(test.condition, path, text) is test(path, text)  # type: ignore[attr-defined,operator]
