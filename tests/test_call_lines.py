"""A module's calls by name are found walking only the lines that write the name (branch `hot`).

`Summary.calls(name)`, `Summary.passing(name)` and `Summary.calls_writing(...)` go into a node
only when its lines hold one that writes the name (or a byte outside ASCII); `Summary.parent`
goes down by positions before it maps a whole statement. Each answer must be the one the whole
walk gives: checked here on tricky modules and on every module of this repository.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis.nodes import calls_in, walk
from amp_clipfix.analysis.python_configs import walk as mappings
from amp_clipfix.analysis.summary import Summary, called_name, summarise

ROOT = Path(__file__).resolve().parent.parent

TRICKY = '''\
import functools
from omegaconf import OmegaConf as OC


@register.fit(
    name="x",
)
def decorated():
    return 1


class Model(make_base(fit=1)):
    @property
    def value(self):
        return f"{self.fit(1)} and" + f"""
{trainer.fit(
   3)} {
other.fit(2)}"""

    def train(self):
        result = (trainer
                  .fit(model))
        run(self.fit, key=self.fit)
        threads = [start(target=fit) for _ in range(2)]
        handler = lambda: fit(4)
        match result:
            case {"fit": value}:
                fit(value)
        try:
            pass
        except fit(5) as error:
            fit(6)
        return ﬁt(7), functools.partial(fit, 8)(9)


config = OC.create(
    {"trainer": {"max_epochs": 1}}
)
other = OC.create(dict(model=1))
plain = OC.create(path)
nested = OC.create([
    dict(a=1)])
'''


def summary_of(text: str, name: str = "tricky.py") -> Summary:
    found = summarise(Path("/project"), Path("/project") / name, text)
    assert found is not None
    return found


def all_calls(summary: Summary) -> list[ast.Call]:
    return [node for node in walk(summary.tree) if isinstance(node, ast.Call)]


def expected_calls(summary: Summary, name: str) -> list[ast.Call]:
    """What the whole walk gives (the index Summary.calls used to build)."""
    found = [call for call in all_calls(summary) if called_name(call.func) == name]
    return sorted(found, key=lambda call: (call.lineno, call.col_offset))


def expected_passing(summary: Summary, name: str) -> list[ast.Call]:
    arguments = lambda call: [*call.args, *(k.value for k in call.keywords)]  # noqa: E731
    return [c for c in all_calls(summary) if name in {called_name(a) for a in arguments(c)}]


def index_of(summary: Summary) -> tuple[dict[str, list[ast.Call]], dict[str, list[ast.Call]]]:
    """expected_calls and expected_passing of every name, from one walk."""
    calls: dict[str, list[ast.Call]] = {}
    passing: dict[str, list[ast.Call]] = {}
    for call in all_calls(summary):
        name = called_name(call.func)
        if name:
            calls.setdefault(name, []).append(call)
        arguments = [*call.args, *(k.value for k in call.keywords)]
        for passed in sorted({n for a in arguments if (n := called_name(a))}):
            passing.setdefault(passed, []).append(call)
    for found in calls.values():
        found.sort(key=lambda call: (call.lineno, call.col_offset))
    return calls, passing


def test_the_calls_of_a_name_are_the_whole_walks() -> None:
    """Decorators above their `def`, a callee on the line after its receiver, f-strings over
    several lines, lambdas, comprehensions, `match` and `except` clauses: all are found."""
    summary = summary_of(TRICKY)
    fits = summary.calls("fit")
    assert fits == expected_calls(summary, "fit")
    lines = {call.lineno for call in fits}
    assert lines == {5, 15, 16, 18, 21, 25, 28, 31, 32, 33}


def test_a_name_spelled_outside_ascii_is_found() -> None:
    """Python reads `ﬁt` as `fit` (NFKC): a line holding bytes outside ASCII is always walked."""
    summary = summary_of("x = 1\nﬁt(7)\n")
    assert [call.lineno for call in summary.calls("fit")] == [2]


def test_lines_not_writing_the_name_are_not_walked() -> None:
    """The gate itself: calls on other lines are not listed at all (their nodes are never
    visited), and a module that never writes the name gives none without a whole walk."""
    summary = summary_of("def a():\n    g(h(1))\n\n\ndef b():\n    fit(2)\n")
    assert [call.lineno for call in summary.calls_writing("fit")] == [6]
    assert calls_in(summary.tree, [6]) == summary.calls("fit")
    assert summary.calls("nothing") == []
    assert summary._walked_calls is None  # never listed whole


def test_passing_is_the_whole_walks() -> None:
    summary = summary_of(TRICKY)
    for name in ("fit", "target", "value", "path"):
        assert summary.passing(name) == expected_passing(summary, name)
    assert summary.passing("fit")  # `run(self.fit, key=self.fit)`, `partial(fit, 8)`


def test_mappings_are_found_on_the_lines_that_write_one() -> None:
    """config_documents' calls: a first argument holding a `{...}` or `dict(...)` mapping."""
    summary = summary_of(TRICKY)
    listed = summary.calls_writing("dict", signs=(b"{",))
    with_mapping = [c for c in all_calls(summary) if c.args and next(mappings(c.args[0]), None)]
    assert [c for c in listed if c.args and next(mappings(c.args[0]), None)] == with_mapping
    assert [call.lineno for call in with_mapping] == [36, 39, 41]


def test_once_listed_every_call_is_given() -> None:
    summary = summary_of(TRICKY)
    everything = summary.walked_calls()
    assert everything == calls_in(summary.tree) == all_calls(summary)
    assert summary.calls_writing("fit") is everything


def python_files() -> list[Path]:
    found = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py"))
    return [path for path in found if "expected" not in path.parts]


@pytest.mark.parametrize("chunk", range(4))
def test_every_module_here_gives_the_whole_walks_answers(chunk: int) -> None:
    """Every name called or passed in every module of this repository (the tool's own code and
    the fixtures): the same calls, in the same order; and every call's parent is its own."""
    files = python_files()[chunk::4]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        gated = summary_of(text, path.name)
        calls, passing = index_of(gated)
        for name in sorted(set(calls) | set(passing)):
            assert gated.calls(name) == calls.get(name, []), (path, name)
            assert gated.passing(name) == passing.get(name, []), (path, name)
        assert gated._walked_calls is None  # each answer came from its own lines
        parents = {child: node for node in walk(gated.tree) for child in ast.iter_child_nodes(node)}
        for call in all_calls(gated)[::7]:
            assert gated.parent(call) is parents[call], (path, call.lineno)


def test_a_keyword_on_a_later_line_finds_its_call() -> None:
    """plugin_entries' calls: a `plugins=` keyword written lines below the call's start."""
    text = "import lightning as L\n\nx = f(g(1))\ntrainer = L.Trainer(\n    devices=1,\n"
    text += "    plugins=[MixedPrecision('16-mixed', 'cpu')],\n)\n"
    summary = summary_of(text)
    listed = summary.calls_writing("plugins")
    with_keyword = [c for c in all_calls(summary) if any(k.arg == "plugins" for k in c.keywords)]
    assert [c for c in listed if c in with_keyword] == with_keyword
    assert [call.lineno for call in with_keyword] == [4]
    assert all(call.lineno != 3 for call in listed)  # `f(g(1))` is on no line writing it
