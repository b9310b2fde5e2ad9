"""The function bodies one rule's search parsed and did not read are kept for the next rule
while the bodies noted since the last let-go span at most `bodies.HELD_LINES` lines, as before
a module is loaded: the later rule reads them without parsing them again (the Lightning tree's
rules read 34 bodies an earlier rule had parsed). Past the bound they are let go at the rule
boundary as before, and a body read then is the one a whole parse gives."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from amp_clipfix.analysis import bodies
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.records import replace
from amp_clipfix.rules import RULES, find_findings
from amp_clipfix.rules.base import Found, Queries, Rule

MODULE = """\
def first(x):
    return x + 1


class Model:
    def step(self, batch):
        loss = batch.sum()
        loss.backward()
        return loss
"""


class Run:
    """Two rules over one module: the first loads it (its bodies noted, none read), the
    second reads the method's body; the bodies each read of a let-go body parsed again."""

    def __init__(self) -> None:
        self.store = bodies.Bodies()
        self.summary: Summary | None = None
        self.read: list[list[ast.stmt]] = []

    def loads(self, queries: Queries) -> Iterator[Found]:
        self.summary = summarise(Path("/p"), Path("/p/m.py"), MODULE, bodies=self.store)
        yield from ()

    def reads(self, queries: Queries) -> Iterator[Found]:
        assert self.summary is not None
        method = self.summary.top["Model"][0].body[0]  # type: ignore[attr-defined]
        self.read.append(method.body)
        yield from ()

    def rules(self) -> list[Rule]:
        base = RULES["ACF009"]  # any rule with words: the pipeline gives it the facts
        return [replace(base, check=self.loads), replace(base, check=self.reads)]


@pytest.fixture
def parsed_again(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    parse_again = bodies.parse_again

    def counted(node: bodies.Function, lines: object) -> list[ast.stmt]:
        names.append(node.name)
        return parse_again(node, lines)  # type: ignore[arg-type]

    monkeypatch.setattr(bodies, "parse_again", counted)
    return names


def test_a_later_rule_reads_an_earlier_rule_s_bodies_without_parsing_them_again(
    parsed_again: list[str],
) -> None:
    run = Run()
    facts = object()  # never asked: the checks here read no facts
    find_findings([], DEFAULT_TARGET, run.rules(), facts, run.store)  # type: ignore[arg-type]
    assert parsed_again == []  # before, every rule began by letting go: `step` parsed again
    assert [type(s) for s in run.read[0]] == [ast.Assign, ast.Expr, ast.Return]
    assert run.store.let_go() == 1  # `first`, still unread, is let go at the next let-go


def test_past_the_bound_a_rule_boundary_lets_go_and_the_body_read_is_the_whole_parse_s(
    parsed_again: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bodies, "HELD_LINES", 3)  # the module's two functions span 6 lines
    run = Run()
    find_findings([], DEFAULT_TARGET, run.rules(), object(), run.store)  # type: ignore[arg-type]
    assert parsed_again == ["step"]
    whole = ast.parse(MODULE).body[1].body[0].body  # type: ignore[attr-defined]
    assert ast.dump(ast.Module(run.read[0], []), include_attributes=True) == ast.dump(
        ast.Module(whole, []), include_attributes=True
    )
