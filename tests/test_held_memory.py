"""What a run holds (issue 35's peak on the largest tree, session 25 `mem`):

- the word index made whole at once holds one text's set of words at a time past its bound
  (all of them held until the inversion raised DeepLearningExamples' heap by 33 MB for the rest
  of the run), and its answers are `index_of`'s;
- before a module is loaded, the bodies of the generation before are let go, not those noted
  since the last turn (`Bodies.let_go_older`); a body let go so is the one a whole parse gives,
  and a run reports what a run keeping every body reports;
- the reach index's names of a file (`bound_names.file_names`) read no body for good: they
  are looked at with `bodies.peek`, and the names are those a file read whole gives.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from amp_clipfix.analysis import bodies, bound_names, relevance
from amp_clipfix.analysis.bound_names import FileNames, file_names, own_names
from amp_clipfix.analysis.relevance import WordFiles, index_of
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET


class Words(set[bytes]):
    """A text's words, counted while alive."""

    live = 0
    most = 0

    def __init__(self, words: set[bytes]) -> None:
        super().__init__(words)
        Words.live += 1
        Words.most = max(Words.most, Words.live)

    def __del__(self) -> None:
        Words.live -= 1


def test_an_index_past_its_bound_holds_one_text_s_words_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [(Path(f"m{n}.py"), f"a{n} = b{n}(c{n}, shared)\n".encode()) for n in range(60)]
    expected = index_of(texts)
    text_words = relevance.text_words
    monkeypatch.setattr(relevance, "text_words", lambda data: Words(text_words(data)))
    monkeypatch.setattr(WordFiles, "LAZY_MOST", 10)  # four words a text: past it at the third
    Words.live = Words.most = 0
    files = WordFiles(texts)
    assert files.whole is not None and files.texts is None
    assert Words.most <= 5  # the three under the bound, the one put in and the next (60 before)
    assert Words.live == 0
    assert dict(files) == expected
    assert files.get(b"shared") == [path for path, _ in texts]


def test_an_index_under_its_bound_keeps_the_sets_as_before() -> None:
    texts = [(Path(f"m{n}.py"), f"a{n} = 1\n".encode()) for n in range(5)]
    files = WordFiles(texts)
    assert files.whole is None and files.texts is not None and files.size == 10
    assert dict(files) == index_of(texts)


MODULE = """\
def first(x):
    return x + 1


class Model:
    def step(self, batch):
        loss = batch.sum()
        return loss
"""


def made(name: str, store: bodies.Bodies, text: str = MODULE) -> Summary:
    summary = summarise(Path("/p"), Path(f"/p/{name}.py"), text, bodies=store)
    assert summary is not None
    return summary


def noted(summary: Summary) -> list[bodies.Function]:
    """The module's and its classes' functions, found without reading a body."""
    found: list[bodies.Function] = []
    todo: list[ast.stmt] = list(summary.tree.body)
    while todo:
        statement = todo.pop(0)
        if isinstance(statement, bodies.FUNCTIONS):
            found.append(statement)
        elif isinstance(statement, ast.ClassDef):
            todo.extend(statement.body)
    return found


def unread_bodies(summary: Summary) -> list[bool]:
    return [isinstance(node.__dict__.get("body"), bodies.Unread) for node in noted(summary)]


def test_a_load_lets_go_of_the_generation_before_only() -> None:
    store = bodies.Bodies()
    one = made("one", store)
    assert store.let_go_older(3) == 0  # `one` (6 lines) becomes the older generation
    assert unread_bodies(one) == [False, False]
    two = made("two", store)
    assert store.let_go_older(100) == 0  # under the bound: no turn
    assert store.let_go_older(3) == 2  # `one`'s two bodies; `two`'s are the older now
    assert unread_bodies(one) == [True, True] and unread_bodies(two) == [False, False]
    assert store.let_go() == 2  # a rule boundary lets go of both generations
    assert unread_bodies(two) == [True, True]
    whole = ast.parse(MODULE)
    for summary in (one, two):
        assert ast.dump(summary.tree, include_attributes=True) == ast.dump(
            whole, include_attributes=True
        )


def test_a_body_read_in_the_generation_before_is_kept() -> None:
    store = bodies.Bodies()
    one = made("one", store)
    store.let_go_older(0)
    body = one.top["first"][0].body  # type: ignore[attr-defined]
    made("two", store)
    assert store.let_go_older(0) == 1  # `step` only
    assert one.top["first"][0].body is body  # type: ignore[attr-defined]


FACTORY = """\
import torch


def unrelated():
    return [i for i in range(3)]


def clip(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""

LOOP = """\
import torch
from factory import clip


def step(model, loss, optimizer):
    scaler = torch.cuda.amp.GradScaler()
    scaler.scale(loss).backward()
    clip(model)
    scaler.step(optimizer)
    scaler.update()
"""


def report(folder: Path) -> str:
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True))
    return json.dumps(
        [(f.code, f.message, [str(s) for s in f.sites]) for f in result.findings], sort_keys=True
    )


def test_a_run_letting_go_of_generations_reports_what_one_keeping_every_body_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "factory.py").write_text(FACTORY)
    (folder / "loop.py").write_text(LOOP)
    monkeypatch.setattr(bodies, "HELD_LINES", 0)  # a turn at every load
    turns: list[int] = []
    let_go_older = bodies.Bodies.let_go_older

    def counted(self: bodies.Bodies, held: int) -> int:
        turns.append(let_go_older(self, held))
        return turns[-1]

    monkeypatch.setattr(bodies.Bodies, "let_go_older", counted)
    letting_go = report(folder)
    assert "ACF004" in letting_go and turns
    monkeypatch.setattr(bodies.Bodies, "let_go", lambda self, held=0: 0)
    monkeypatch.setattr(bodies.Bodies, "let_go_older", lambda self, held: 0)
    assert report(folder) == letting_go


NAMES = """\
import os as system


def train(model, *, steps=1):
    class Local:
        field = 1

    def inner():
        global counter
        counter = 1
    model.step = inner
    setattr(model, "hook", inner)
    return Local


class Trainer:
    attribute = 2

    def __init__(self, loader):
        self.loader = loader

    @property
    def state(self):
        match self.loader:
            case {"rest": x, **others}:
                return x
"""


def whole_names() -> tuple[Summary, FileNames]:
    whole = summarise(Path("/p"), Path("/p/names.py"), NAMES)
    assert whole is not None
    return whole, file_names(whole, NAMES.encode())


@pytest.mark.parametrize("let_go", [False, True], ids=["held", "let-go"])
def test_the_reach_index_s_names_read_no_body_for_good(let_go: bool) -> None:
    store = bodies.Bodies()
    summary = made("names", store, NAMES)
    if let_go:
        store.let_go()
    found = file_names(summary, NAMES.encode())
    functions = noted(summary)
    assert len(functions) == 3 and all(type(f) in bodies.UNREAD_KINDS for f in functions)
    assert own_names(summary, found) == own_names(whole_names()[0], whole_names()[1])
    assert all(type(f) in bodies.UNREAD_KINDS for f in functions)  # none read for good
    whole, expected = whole_names()
    assert found.value_names == expected.value_names
    assert found.module_values == expected.module_values
    assert found.every == expected.every
    assert (
        sorted(found.functions)
        == sorted(expected.functions)
        == [
            "__init__",
            "inner",
            "state",
            "train",
        ]
    )
    assert [type(s).__name__ for s in bound_names.peeked_statements(summary)] == [
        type(s).__name__ for s in whole.walked_statements()
    ]
