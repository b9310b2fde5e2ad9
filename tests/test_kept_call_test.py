"""ACF013 tests a candidate file by its syntax too (kept_call_test.py): a file whose text may
write a Trainer call with a `**` spread but whose tree holds none that `library_calls` would
evaluate is refused, unread, so an edit there that writes none keeps ACF013's answer. Every
warm output is a cold `--no-cache` run's bytes (`same_as_cold`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from piped import amp_clipfix
from test_candidate_answers import PYPROJECT, edit
from test_incremental import computed, reused, same_as_cold, spied_queries, write

from amp_clipfix.analysis import frame, recording
from amp_clipfix.analysis.kept_call_test import KEPT_CALL_TEST, KeptCallTest
from amp_clipfix.analysis.names import TRAINER_CLASSES
from amp_clipfix.rules import acf013

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

FSDP = """import lightning as L

trainer = L.Trainer(strategy="fsdp", gradient_clip_val=1.0)
"""
# Names Lightning, holds ACF013's word and `**` spreads, but calls no Trainer: refused.
MODEL = """import lightning as L


def options(**kwargs):
    return dict(**kwargs)


class Model(L.LightningModule):
    def configure_gradient_clipping(self, *args, **kwargs):
        value = self.trainer.gradient_clip_val
        return super().configure_gradient_clipping(*args, **kwargs)
"""


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_fsdp.py", FSDP)
    write(root, "model.py", MODEL)
    write(root, "pyproject.toml", PYPROJECT)
    return root


def cold(project: Path, asked: list[tuple[str, bool]]) -> bytes:
    """The first run, its cache empty, against a `--no-cache` one; the queries' log cleared."""
    first = same_as_cold(project)
    assert b"a_fsdp.py:3" in first and b"model.py" not in first
    asked.clear()
    return first


def test_an_edit_that_writes_no_call_acf013_reads_reuses_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """model.py is refused before and after the edit: ACF013 never read it, and is reused."""
    cold(project, asked)
    edit(project, "model.py", "value = ", "kept = options(**kwargs)\n        value = ")
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm
    assert "rule ACF013" in reused(asked), asked


@pytest.mark.parametrize(
    "written",
    [
        'L.Trainer(strategy="fsdp", gradient_clip_val=2.0)',  # by its qualified name
        'L.Trainer(**dict(strategy="fsdp", gradient_clip_val=2.0))',  # a spread
        'make(strategy="fsdp", gradient_clip_val=2.0)',  # through an alias (`make = L.Trainer`)
    ],
)
def test_an_edit_that_writes_a_call_acf013_reads_computes_it(
    project: Path, asked: list[tuple[str, bool]], written: str
) -> None:
    """model.py now writes a call `library_calls` evaluates: the test lets it through, so
    ACF013 is computed, and finds what a cold run finds."""
    cold(project, asked)
    lines = f"    make = L.Trainer\n        trainer = {written}\n        value = "
    edit(project, "model.py", "    value = ", lines)
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm
    assert "rule ACF013" in computed(asked), asked
    if "**" not in written:
        assert b"model.py:11" in warm


def test_an_edit_to_a_file_acf013_reads_computes_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    cold(project, asked)
    edit(project, "a_fsdp.py", "gradient_clip_val=1.0", "gradient_clip_val=0.0")
    warm = same_as_cold(project)
    assert b"a_fsdp.py" not in warm
    assert "rule ACF013" in computed(asked), asked


def test_a_refused_file_edited_so_it_does_not_parse(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """A text that does not parse passes the test: the search reads it, and the run reports
    it as a cold run does."""
    cold(project, asked)
    edit(project, "model.py", "value = ", "value = (")
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm
    reported = amp_clipfix(project, "check", "--no-cache", entry=False)
    assert b"model.py:10:17: error: cannot parse" in reported.stderr and reported.code == 2


@pytest.mark.parametrize("budget", [3, 6, 9, 25])
def test_answers_the_budget_cuts_after_an_edit_to_a_refused_file(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    monkeypatch.setattr(frame, "BUDGET", budget)
    same_as_cold(project)
    asked.clear()
    edit(project, "model.py", "value = ", "kept = options(**kwargs)\n        value = ")
    same_as_cold(project)
    assert "rule ACF013" in reused(asked), asked


@pytest.mark.parametrize("change", ["added", "removed"])
def test_a_refused_file_added_or_removed(
    project: Path, asked: list[tuple[str, bool]], change: str
) -> None:
    if change == "removed":
        write(project, "other_model.py", MODEL)
    cold(project, asked)
    if change == "added":
        write(project, "other_model.py", MODEL)
    else:
        (project / "other_model.py").unlink()
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm and b"model.py" not in warm


def test_a_new_file_with_a_call_is_found(project: Path, asked: list[tuple[str, bool]]) -> None:
    cold(project, asked)
    write(project, "b_fsdp.py", FSDP)
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm and b"b_fsdp.py:3" in warm
    assert "rule ACF013" in computed(asked), asked


def kept_test(root: Path) -> KeptCallTest:
    return KeptCallTest(root, TRAINER_CLASSES, acf013.FSDP_CLIP)


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        (MODEL, False),
        (FSDP, True),
        (MODEL + "\nmake = L.Trainer\nmake(**options())\n", True),
        (MODEL + "\nx = (\n", True),  # does not parse: read to know
        (
            "import lightning as L\nL.Trainer(**x)\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
            True,
        ),
        (MODEL.replace("**", "*"), False),  # the text test refuses it already
    ],
)
def test_the_test_is_a_function_of_the_text(tmp_path: Path, text: str, passes: bool) -> None:
    """The test, and the predicate a later run asks again (by its noted condition), give the
    same answer; a text that does not parse passes."""
    data = text.encode("utf-8")
    test = kept_test(tmp_path)
    assert test(tmp_path / "m.py", data) is passes
    condition = test.condition
    assert condition[:2] == ("fn", KEPT_CALL_TEST)
    again = recording.predicate(KEPT_CALL_TEST)(tmp_path / "m.py", data, *condition[2:])
    assert again is passes
