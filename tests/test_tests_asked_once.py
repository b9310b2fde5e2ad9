"""A warm run's checks ask a search's noted test of a changed file once (query_checks.
asked_again): ACF013's syntax test of an edited file it refuses parses the file, and the
settle, whose entry notes that test again and wraps it in `may_fail_to_parse`, takes that
answer instead of parsing the file twice more. Every warm output is a cold `--no-cache` run's
bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_candidate_answers import PYPROJECT, edit
from test_incremental import computed, reused, same_as_cold, spied_queries, write
from test_kept_call_tree_handed import parses as model_parses

from amp_clipfix.analysis import query_checks, recording
from amp_clipfix.analysis.calls import CallTest
from amp_clipfix.analysis.names import TRAINER_CLASSES
from amp_clipfix.analysis.questions import MAY_FAIL, Unparsed

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored
parses = model_parses  # the texts of model.py a summary parsed (both models hold its MARK)

FSDP = """import lightning as L

trainer = L.Trainer(strategy="fsdp", gradient_clip_val=1.0)
"""
# Names Lightning, holds ACF013's word and `**` spreads, but calls no Trainer: ACF013's test
# refuses it after parsing it; the settle notes that test too (questions.Unparsed).
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
    write(cached_root, "a_fsdp.py", FSDP)
    write(cached_root, "model.py", MODEL)
    write(cached_root, "pyproject.toml", PYPROJECT)
    return cached_root


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("value = ", "kept = options(**kwargs)\n        value = "),  # still refused
        ("import lightning as L\n", "import lightning as L\n\n_edited = 1\n"),  # a line added
    ],
)
def test_an_edit_to_a_refused_file_parses_it_once_for_every_check(
    project: Path,
    asked: list[tuple[str, bool]],
    parses: list[str],
    old: str,
    new: str,
) -> None:
    same_as_cold(project)
    asked.clear()
    parses.clear()
    edit(project, "model.py", old, new)
    warm = same_as_cold(project)
    assert b"a_fsdp.py:3" in warm and b"model.py" not in warm
    assert {"rule ACF013", "settle"} <= set(reused(asked)), asked
    # the warm run's checks: one parse (ACF013's test, whose answer the settle's check takes;
    # three before); the cold `--no-cache` run's own test: one
    assert len(parses) == 2, len(parses)


def test_an_edit_that_writes_a_call_is_read_and_found(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """The test now lets model.py through: ACF013 is computed and finds what a cold run finds."""
    same_as_cold(project)
    asked.clear()
    edit(
        project,
        "model.py",
        "value = ",
        'L.Trainer(strategy="fsdp", gradient_clip_val=2.0)\n        value = ',
    )
    warm = same_as_cold(project)
    assert b"model.py:" in warm
    assert "rule ACF013" in computed(asked), asked


TEXTS = [
    b"import lightning as L\nL.Trainer(**options)\n",  # passes the test, parses
    b"import lightning as L\nL.Trainer(**options)\nx = (\n",  # passes, does not parse
    b"x = (\n",  # does not parse, the test refuses it
    b"import lightning as L\nx = options(**kwargs)\n",  # the test refuses it
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_guarded_test_asked_apart_gives_its_own_answer(tmp_path: Path, text: bytes) -> None:
    """`may_fail_to_parse` asked through the memo (its inner test apart) gives the answer it
    gives asked whole, whether or not the inner test was asked before."""
    where = CallTest(tmp_path, TRAINER_CLASSES)
    inner = where.condition
    guarded = Unparsed(where).condition
    assert guarded is not None and guarded[1] == MAY_FAIL and guarded[1] in recording.GUARDED
    path = tmp_path / "m.py"
    whole = bool(recording.predicate(MAY_FAIL)(path, text, *guarded[2:]))
    memo: dict[tuple[recording.Test, Path], bool] = {}
    assert query_checks.asked_again(guarded, path, text, memo) is whole
    assert query_checks.asked_again(guarded, path, text, memo) is whole  # from the memo
    first: dict[tuple[recording.Test, Path], bool] = {}
    assert query_checks.asked_again(inner, path, text, first) is where(path, text)
    assert query_checks.asked_again(guarded, path, text, first) is whole


def test_an_inner_test_that_cannot_say_counts_the_file(tmp_path: Path) -> None:
    """A test that raises counts the file (the search is computed again), guarded or not."""
    recording.PREDICATES["raises_for_the_test"] = lambda path, data: 1 / 0
    try:
        inner = ("fn", "raises_for_the_test")
        memo: dict[tuple[recording.Test, Path], bool] = {}
        path = tmp_path / "m.py"
        assert query_checks.asked_again(inner, path, b"x = 1\n", memo) is True
        assert query_checks.asked_again(("fn", MAY_FAIL, inner), path, b"x = 1\n", memo) is True
    finally:
        del recording.PREDICATES["raises_for_the_test"]
