"""A call of a plain function (no `*args`, no `**kwargs`) that spreads nothing binds only its
arguments and the defaults, unevaluated: `plain_binds.bound_once` binds it once and keeps it for
every parameter asked and every pass over a cycle. The same values as binding anew each time;
a function collecting `**kwargs` or a call spreading `*x` / `**x` is bound anew each time."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from amp_clipfix.analysis import plain_binds
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import summarise

PROGRAM = """
    class A:
        pass


    class B:
        pass


    class C:
        pass


    def helper(a, b, c=C):
        return a, b, c


    def spread(a, **rest):
        return a, rest


    def first():
        return helper(A(), B)


    def second():
        return helper(B(), b=A, c=A)


    def third(options):
        x = spread(A(), b=B)
        y = spread(**options)
        return helper(*[A(), B()]), x, y


    third({"a": C})
    """


def line_of(text: str) -> int:
    """The line of the program (as written to its file) that holds `text`."""
    lines = textwrap.dedent(PROGRAM).splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


@pytest.fixture
def binds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Every `bind` made: (function name, call line)."""
    made: list[tuple[str, int]] = []
    original = Evaluator.bind

    def counted(self: Evaluator, function: ast.AST, call: ast.Call, *rest: object) -> object:
        made.append((function.name, call.lineno))  # type: ignore[attr-defined]
        return original(self, function, call, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Evaluator, "bind", counted)
    yield made


def parameter_values(tmp_path: Path, function_name: str) -> dict[str, list[str]]:
    """Each parameter's values as read in the function's body (from its callers), described."""
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(PROGRAM))
    evaluator = project_evaluator(
        tmp_path, {path: path.read_bytes()}, lambda p: summarise(tmp_path, p, p.read_text())
    )
    summary = evaluator.summary(path)
    assert summary is not None
    function = next(
        s for s in summary.tree.body if isinstance(s, ast.FunctionDef) and s.name == function_name
    )
    found: dict[str, list[str]] = {}
    for node in ast.walk(function.body[0]):
        if isinstance(node, ast.Name):
            values = evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))
            found[node.id] = sorted(describe(value) for value in values)
    return found


def describe(value: object) -> str:
    node = getattr(value, "node", None) or getattr(getattr(value, "cls", None), "node", None)
    return f"{type(value).__name__}:{getattr(node, 'name', getattr(node, 'lineno', ''))}"


def test_each_plain_call_is_bound_once_for_every_parameter(
    tmp_path: Path, binds: list[tuple[str, int]]
) -> None:
    found = parameter_values(tmp_path, "helper")
    assert set(found) == {"a", "b", "c"}
    lines = (line_of("helper(A(), B)"), line_of("helper(B(), b=A, c=A)"))
    plain = [b for b in binds if b[1] in lines]
    assert sorted(plain) == [("helper", line) for line in lines]  # 3 parameters, 1 bind each


def test_the_same_values_as_binding_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binds: list[tuple[str, int]]
) -> None:
    kept = parameter_values(tmp_path, "helper")
    made = len(binds)
    monkeypatch.setattr(plain_binds, "plain", lambda function, call: False)
    (tmp_path / "again").mkdir()
    anew = parameter_values(tmp_path / "again", "helper")
    assert anew == kept
    assert len(binds) - made > made  # bound anew for each parameter
    # `c`: the default C twice (two calls give none) and A once, the same value kept once
    assert kept == {
        "a": ["Inst:A", "Inst:A", "Inst:B"],
        "b": ["ClsV:A", "ClsV:B", "Inst:B"],
        "c": ["ClsV:A", "ClsV:C"],
    }


def test_spreads_and_collectors_are_bound_each_time(
    tmp_path: Path, binds: list[tuple[str, int]]
) -> None:
    parameter_values(tmp_path, "helper")
    starred = [b for b in binds if b == ("helper", line_of("helper(*["))]
    assert len(starred) == 3  # `helper(*[...])`: once per parameter
    binds.clear()
    (tmp_path / "spread").mkdir()
    parameter_values(tmp_path / "spread", "spread")
    for call in ("spread(A(), b=B)", "spread(**options)"):
        assert binds.count(("spread", line_of(call))) == 2  # `a` and `rest`: each anew


def test_plain() -> None:
    def parts(function: str, call: str) -> tuple[ast.FunctionDef, ast.Call]:
        defined = ast.parse(function).body[0]
        made = ast.parse(call, mode="eval").body
        assert isinstance(defined, ast.FunctionDef) and isinstance(made, ast.Call)
        return defined, made

    assert plain_binds.plain(*parts("def f(a, b=1, *, c): pass", "f(1, c=2)"))
    assert not plain_binds.plain(*parts("def f(a, *rest): pass", "f(1)"))
    assert not plain_binds.plain(*parts("def f(a, **rest): pass", "f(1)"))
    assert not plain_binds.plain(*parts("def f(a): pass", "f(*x)"))
    assert not plain_binds.plain(*parts("def f(a): pass", "f(**x)"))
