"""A file that does not parse is reported when a question the run asked would read it
(analysis/questions.py): it holds the question's word and passes its text test, read by the
search or not. A file holding only the words of questions not asked, or refused by the text test
of every question asked, changes no finding whatever its parse: not reported, no exit 2. Warm
runs report what cold ones do when an edit elsewhere changes which questions are asked."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import computed, edit_line, same_as_cold, spied_queries, write

from amp_clipfix.analysis import facts, project_resolve
from amp_clipfix.analysis.facts import FileFacts, LazyFiles

# A module optimizing by hand: ACF009 searches (its `needs`), for `gradient_clip_val=` calls.
MODEL = """import lightning as L


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
"""
# A Trainer that clips, made where any code may take it: ACF009 asks which modules it fits,
# so the project's `ProjectFacts.fits` question (its word `.fit(`) is asked.
CLIPPING_TRAINER = "import lightning as L\n\ntrainer = L.Trainer(gradient_clip_val=1.0)\n"
PLAIN_TRAINER = CLIPPING_TRAINER.replace("gradient_clip_val=1.0", "max_epochs=1")
BROKEN_FIT = "estimator.fit(x\n"  # the word of `fits` only, and no parse
FIT_ERROR = "a.py:1:14: error: cannot parse: '(' was never closed"

asked = pytest.fixture(name="asked")(spied_queries)


def project(root: Path, trainer: str) -> Path:
    write(root, "model.py", MODEL)
    write(root, "train.py", trainer)
    write(root, "a.py", BROKEN_FIT)
    return root


def errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if ": error: " in line]


def check(root: Path) -> tuple[int, list[str]]:
    run = amp_clipfix(root, "check", "--no-cache", entry=False)
    return run.code, errors(run.stdout.decode() + run.stderr.decode())


def test_a_broken_file_holding_only_the_word_of_a_question_not_asked_is_not_reported(
    tmp_path: Path,
) -> None:
    """No Trainer clips, so no search asks which modules a Trainer fits: `a.py`'s parse
    changes nothing. The old settle reported it (exit 2)."""
    assert check(project(tmp_path, PLAIN_TRAINER)) == (0, [])


def test_the_same_file_is_reported_once_its_question_is_asked(tmp_path: Path) -> None:
    """A clipping Trainer: ACF009 asks `fits`, whose answer would read `a.py` (read or not)."""
    assert check(project(tmp_path, CLIPPING_TRAINER)) == (2, [FIT_ERROR])


def test_a_broken_file_every_asked_question_refuses_by_its_text_is_not_reported(
    tmp_path: Path,
) -> None:
    """`b.py` holds ACF009's word `gradient_clip_val` but writes no such keyword (its text
    test, shape_texts.py): not reported. `c.py` writes the keyword: reported."""
    root = project(tmp_path, CLIPPING_TRAINER)
    write(root, "b.py", 'settings = {"gradient_clip_val": (1.0}\n')
    write(root, "c.py", "settings = dict(gradient_clip_val=(1.0)\n")
    code, found = check(root)
    assert code == 2
    assert found == [FIT_ERROR, "c.py:1:16: error: cannot parse: '(' was never closed"]


def test_an_edit_that_asks_the_question_reports_the_unchanged_file_warm_as_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[tuple[str, bool]]
) -> None:
    """`a.py` never changes; train.py's edits ask `fits` and stop asking it. Each warm run
    prints (and exits with) what a cold one does, and the settle is computed again."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "project", PLAIN_TRAINER)
    write(root, "pyproject.toml", '[project]\nname = "demo"\ndependencies = ["lightning>=2.0"]\n')
    assert FIT_ERROR not in same_as_cold(root).decode()
    asks = edit_line("train.py", "max_epochs=1", "gradient_clip_val=1.0")
    stops = edit_line("train.py", "gradient_clip_val=1.0", "max_epochs=2")  # a new text
    again = edit_line("train.py", "max_epochs=2", "gradient_clip_val=2.0")
    fixed = edit_line("a.py", "fit(x", "fit(x)")
    for edit, reported in [(asks, True), (stops, False), (again, True), (fixed, False)]:
        asked.clear()
        edit(root)
        warm = amp_clipfix(root, "check", entry=False)
        assert (FIT_ERROR in warm.stderr.decode() + warm.stdout.decode()) is reported
        assert warm.code == (2 if reported else 0)
        same_as_cold(root)
        assert "settle" in computed(asked), asked


def test_a_question_wants_the_files_its_search_stopped_before(tmp_path: Path) -> None:
    """A search that takes the first file of a question and stops still asked it: the files
    after that one that it would read are wanted; those without its word, or that its text
    test refuses, are not."""
    texts = {
        tmp_path / "a.py": b"word = 1\n",
        tmp_path / "b.py": b"word = 2\n",
        tmp_path / "c.py": b"other = 3\n",
        tmp_path / "d.py": b"word = 4  # refused\n",
    }
    read: list[Path] = []

    def parse(path: Path) -> FileFacts | None:
        read.append(path)
        return object()  # type: ignore[return-value]

    lazy = LazyFiles(list(texts), texts.get, parse)
    assert not lazy.questions
    first = next(lazy.with_words((b"word",), lambda path, data: b"refused" not in data))
    assert first is not None and read == [tmp_path / "a.py"]
    wanted = [path.name for path in texts if lazy.questions.want(path, texts.get)]
    assert wanted == ["a.py", "b.py"]


# ACF005 searches (a module may optimize by hand and code may clip) for `manual_backward`.
CLIPPING = """def step(module, loss):
    module.manual_backward(loss)
    module.clip_gradients(None, 1.0)
    module.automatic_optimization = False
"""


def test_a_search_that_stops_early_still_has_the_files_it_would_read_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every search here takes the first file of each question and stops (a rule that returns
    early, or fails): the files after it that the question would read are checked all the
    same, by their symbol table, then, where it refuses, by a parse. `b.py` does not parse:
    reported. `c.py` is refused by the symbol table (`nonlocal` at module level) but parses:
    no error. `d.py` holds no asked word: not even checked."""
    with_words = LazyFiles.with_words

    def first_only(self: LazyFiles, *asked: object) -> Iterator[FileFacts]:
        return itertools.islice(with_words(self, *asked), 1)  # type: ignore[arg-type]

    checked: list[str] = []
    may_parse = project_resolve.may_parse

    def spied(text: str) -> bool:
        checked.append(text)
        return may_parse(text)

    monkeypatch.setattr(facts.LazyFiles, "with_words", first_only)
    monkeypatch.setattr(project_resolve, "may_parse", spied)
    write(tmp_path, "a.py", CLIPPING)
    write(tmp_path, "b.py", "def step(module, loss):\n    module.manual_backward(loss\n")
    write(tmp_path, "c.py", "module.manual_backward(x)\nnonlocal x\n")
    write(tmp_path, "d.py", BROKEN_FIT)
    code, found = check(tmp_path)
    assert (code, found) == (2, ["b.py:2:27: error: cannot parse: '(' was never closed"])
    assert [text.split("(")[0] for text in checked] == ["def step", "module.manual_backward"]
