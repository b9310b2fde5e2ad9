"""Which attributes a class's methods assign or add to is read from bodies not kept
(analysis/class_members.py, bodies.peek): an attribute read gives the values a run keeping
every body gives, also when the bodies were let go before it (parsed again to be looked at),
and the methods that do not name the attribute are not read for good."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis import bodies
from amp_clipfix.analysis.class_members import (
    assignments_to,
    list_stored_names,
    list_stores_to,
    self_assigned_names,
)
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.sequences import SeqV
from amp_clipfix.analysis.shapes import first_param, own_statements
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.values import Lit, Opaque

# A renamed first parameter, tuple and annotated targets, an annotation without a value, list
# stores by `append` and `+=`, a nested function's store (not the method's own), a subclass
# assigning the same attribute, and a method that names none of them.
SOURCE = """\
from lightning import Trainer


class Base:
    def __init__(this, flag):
        this.precision = "16-mixed"
        this.plugins = ["a"]

    def unrelated(self):
        values = [i for i in range(3)]
        return values

    async def adds(self):
        self.plugins.append("b")
        self.plugins += ["c"]
        self.a, (self.b, self.c) = 1, (2, 3)
        self.ann: str = "d"
        self.noval: int
        other = self
        other.aliased = "e"

        def nested(inner):
            self.hidden = 5

        return nested


class Child(Base):
    def later(self):
        self.precision = "bf16-mixed"


def main():
    child = Child(1)
    Trainer(
        precision=child.precision,
        plugins=child.plugins,
        c=child.c,
        ann=child.ann,
        hidden=child.hidden,
        aliased=child.aliased,
    )
"""


def described(evaluator: Evaluator, value: object) -> object:
    if isinstance(value, Lit):
        return value.text
    if isinstance(value, Opaque):
        return "?"
    if isinstance(value, SeqV):
        return tuple(
            [described(evaluator, v) for v in evaluator.force(part)]
            for part in (value.items, value.maybe)
        )
    return type(value).__name__


def keywords(tmp_path: Path, store: bodies.Bodies | None) -> tuple[dict[object, object], Summary]:
    """What each keyword of the `Trainer(...)` call may hold, the bodies let go first when
    there is a `store`."""
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    evaluator: Evaluator = project_evaluator(
        tmp_path,
        {path: SOURCE.encode()},
        lambda p: summarise(tmp_path, p, p.read_text(), bodies=store),
    )
    summary = evaluator.summary(path)
    assert summary is not None
    if store is not None:
        assert store.let_go() == 5  # the four methods and main
    (call,) = summary.calls("Trainer")
    found: dict[object, object] = {}
    for keyword in call.keywords:
        values = evaluator.force(evaluator.ev(keyword.value, evaluator.ctx_of(summary, keyword)))
        found[keyword.arg] = [described(evaluator, v) for v in values]
    return found, summary


def test_attributes_read_from_bodies_let_go_are_those_of_bodies_kept(tmp_path: Path) -> None:
    store = bodies.Bodies()
    letting_go, summary = keywords(tmp_path, store)
    kept, _ = keywords(tmp_path, None)
    assert letting_go == kept
    assert letting_go["precision"] == ["bf16-mixed", "16-mixed"]  # the subclass first
    assert letting_go["c"] == ["3"] and letting_go["ann"] == ["d"]
    assert letting_go["hidden"] == ["?"] and letting_go["aliased"] == ["?"]
    assert letting_go["plugins"] == [(["a"], ["c", "b"])]  # `adds` may not run
    base = summary.top["Base"][0]
    methods = {m.name: m for m in base.body if isinstance(m, bodies.FUNCTIONS)}  # type: ignore[attr-defined]
    assert type(methods["unrelated"]) is bodies.FunctionDef  # looked at, never read for good
    assert type(methods["__init__"]) is ast.FunctionDef  # it assigns what was asked: read
    assert type(methods["adds"]) is ast.AsyncFunctionDef


@pytest.mark.parametrize("let_go", [False, True], ids=["kept", "let-go"])
def test_the_names_are_those_of_the_statements(let_go: bool) -> None:
    store = bodies.Bodies()
    summary = summarise(Path("/p"), Path("/p/m.py"), SOURCE, bodies=store)
    assert summary is not None
    methods = [m for m, _ in store.unread if first_param(m) is not None]
    if let_go:
        store.let_go()
    names = {m.name: (self_assigned_names(m), list_stored_names(m)) for m in methods}
    assert all(type(m) in bodies.UNREAD_KINDS for m in methods)  # peeked, not read
    assert sorted(names["adds"][0]) == ["a", "ann", "b", "c"] and names["adds"][1] == ["plugins"]
    assert sorted(names["__init__"][0]) == ["plugins", "precision"] and not names["__init__"][1]
    assert names["unrelated"] == ([], [])
    for method in methods:
        statements = own_statements(method)
        assert names[method.name] == (
            list(assignments_to(first_param(method), statements)),
            list(list_stores_to(first_param(method), statements)),
        )
