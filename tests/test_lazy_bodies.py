"""Function bodies nothing has read are let go and parsed again when first read
(analysis/bodies.py): the nodes read afterwards are those a whole parse gives (the same dump,
positions included), a body anything has read keeps its nodes, trees the summary did not parse
itself are never touched, and a run reports the same bytes with or without letting go."""

from __future__ import annotations

import ast
import gc
import json
from pathlib import Path

import pytest

from amp_clipfix.analysis import bodies
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

# Indented definitions under decorators spanning lines, nested classes, `async`, a body on the
# `def` line with a statement after `;`, strings whose lines are less indented than the body,
# continuation lines, tabs, a form feed, NFKC spellings (`ﬁt` is `fit`), f-strings across
# lines (3.11 places their inner nodes from the string's own position), defs under `if` and
# `try`, and a non-ASCII literal before a column (ast columns count UTF-8 bytes).
PROGRAM = '''\
"""A module."""
import torch as ﬁre


def one(x): return x; y = 2


@torch.no_grad(
    True,
)
@staticmethod
def decorated(a,
              b=1):
    text = """
no indent here
    """
    return a + \\
        b


class Outer:
    """Doc."""

    class Inner:
        async def run(self, ﬁt):
            async with ﬁt as f:
                await f
            return f\"\"\"{ﬁt!r:>{
                10}} {len(
    ﬁt)}\"\"\"

    def method(self):
        pass


    @property
    def value(self) -> "int":
        s = "é"; return len(s)


if True:
    def guarded():
        def nested():
            return 1
        return nested
else:
    async def guarded():
        pass

try:
    def attempt():
        return 1
except ImportError:
    def attempt():
        return 2
finally:
    def last():
        lambda: (yield)

\x0cclass Tabbed:
\tdef method(self):
\t\treturn 1
'''


def functions(tree: ast.AST) -> dict[tuple[int, int], ast.AST]:
    return {
        (node.lineno, node.col_offset): node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def made(text: str, store: bodies.Bodies | None = None) -> Summary:
    summary = summarise(Path("/p"), Path("/p/m.py"), text, bodies=store)
    assert summary is not None
    return summary


@pytest.fixture
def store() -> bodies.Bodies:
    return bodies.Bodies()


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_body_parsed_again_is_the_whole_parse_s(newline: str, store: bodies.Bodies) -> None:
    text = PROGRAM.replace("\n", newline)
    summary = made(text, store)
    noted = [node for node, _ in store.unread]
    assert len(noted) == 11  # every def but the nested one (its parent's body holds it)
    assert store.let_go() == 11
    assert all(isinstance(node.__dict__["body"], bodies.Unread) for node in noted)
    whole = functions(ast.parse(text))
    mine = functions(summary.tree)
    assert sorted(mine) == sorted(whole)
    for position, node in mine.items():
        assert ast.dump(node, include_attributes=True) == ast.dump(
            whole[position], include_attributes=True
        )
    assert len(mine) == 12


def test_a_body_read_keeps_its_nodes(store: bodies.Bodies) -> None:
    summary = made(PROGRAM, store)
    one, decorated = summary.top["one"][0], summary.top["decorated"][0]
    body = decorated.body  # type: ignore[attr-defined]
    assert type(decorated) is ast.FunctionDef  # read: the `ast` class again
    assert store.let_go() == 10  # the one read is kept
    assert decorated.body is body
    assert isinstance(one.__dict__["body"], bodies.Unread)
    first = one.body  # type: ignore[attr-defined]
    assert one.body is first  # type: ignore[attr-defined]  # parsed again once, then kept


def test_two_runs_share_nothing_and_the_ast_classes_are_untouched() -> None:
    """Each run's store lets go of its own bodies only; nothing is set on `ast`'s classes."""
    mine, theirs = bodies.Bodies(), bodies.Bodies()
    first, second = made(PROGRAM, mine), made(PROGRAM, theirs)
    noted = [node for node, _ in mine.unread]
    assert mine.let_go() == 11
    assert all(type(node.__dict__["body"]) is list for node, _ in theirs.unread)
    assert all(isinstance(node.__dict__["body"], bodies.Unread) for node in noted)
    assert "body" not in vars(ast.FunctionDef) and "body" not in vars(ast.AsyncFunctionDef)
    plain = ast.parse(PROGRAM)
    assert all(
        type(node) in (ast.FunctionDef, ast.AsyncFunctionDef)
        for node in ast.walk(plain)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    assert ast.dump(first.tree, include_attributes=True) == ast.dump(plain, include_attributes=True)
    assert ast.dump(second.tree, include_attributes=True) == ast.dump(
        plain, include_attributes=True
    )
    assert compile(first.tree, "m.py", "exec").co_names == compile(plain, "m.py", "exec").co_names


def test_a_peek_keeps_a_body_unread(store: bodies.Bodies) -> None:
    """A fact read with `peek` hands out no node: the body is let go again at the next stage."""
    summary = made(PROGRAM, store)
    method = summary.top["Outer"][0].body[2]  # type: ignore[attr-defined]
    assert method.name == "method"
    assert store.let_go() == 11
    assert [type(s) for s in bodies.peek(method)] == [ast.Pass]  # parsed again, still unread
    assert type(method) is bodies.FunctionDef
    assert store.let_go() == 1  # the one peek parsed again
    assert isinstance(method.__dict__["body"], bodies.Unread)
    assert [type(s) for s in method.body] == [ast.Pass]
    assert type(method) is ast.FunctionDef and store.let_go() == 0


def test_a_body_set_by_code_is_never_let_go(store: bodies.Bodies) -> None:
    summary = made(PROGRAM, store)
    function = summary.top["one"][0]
    given = [ast.Pass()]
    function.body = given  # type: ignore[attr-defined]
    store.let_go()
    assert function.body is given  # type: ignore[attr-defined]


def test_a_body_let_go_is_freed(store: bodies.Bodies) -> None:
    summary = made("def f():\n    return 'a marker'\n", store)
    (function,) = summary.top["f"]
    store.let_go()
    gc.collect()
    markers = [o for o in gc.get_objects() if isinstance(o, ast.Constant) and o.value == "a marker"]
    assert markers == []
    assert ast.unparse(function) == "def f():\n    return 'a marker'"  # read: parsed again


def test_trees_given_to_the_summary_are_never_noted(store: bodies.Bodies) -> None:
    tree = ast.parse(PROGRAM)
    summarise(Path("/p"), Path("/p/m.py"), PROGRAM, tree=tree, bodies=store)
    assert store.let_go() == 0
    assert all(
        type(node) in (ast.FunctionDef, ast.AsyncFunctionDef) for node in functions(tree).values()
    )


def test_the_whole_module_when_the_lines_do_not_parse_alone(store: bodies.Bodies) -> None:
    summary = made(PROGRAM, store)
    store.let_go()
    whole = functions(ast.parse(PROGRAM))
    for position, node in functions(ast.parse(PROGRAM)).items():
        found = bodies.function_from_module(node, summary.lines)  # type: ignore[arg-type]
        assert found is not None
        assert ast.dump(found, include_attributes=True) == ast.dump(
            whole[position], include_attributes=True
        )


FACTORY = """\
import torch


def unrelated():
    return [i for i in range(3)]


def clip(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


def make_optimizer(params, **options):
    return torch.optim.AdamW(params, lr=1e-3, **options)
"""

MODEL = """\
import lightning as L

from factory import make_optimizer


class Model(L.LightningModule):
    def helper(self):
        return 1

    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused=True)
"""

LOOP = """\
import torch
from lightning import Fabric
from factory import clip, make_optimizer


def step(model, loss):
    optimizer = make_optimizer(model.parameters(), fused=True)
    fabric = Fabric(precision="16-mixed")
    fabric.backward(loss)
    clip(model)
    optimizer.step()
"""

TRAIN = """\
import lightning as L

from model import Model

trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""


def report(folder: Path) -> str:
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True))
    return json.dumps(
        [(f.code, f.message, [str(s) for s in f.sites]) for f in result.findings], sort_keys=True
    )


@pytest.mark.parametrize("held", [bodies.HELD_LINES, 0], ids=["rules", "every-load"])
def test_a_run_reports_the_same_when_bodies_are_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int
) -> None:
    """The rules read bodies the resolution let go (parsed again), and report what a run that
    keeps every body reports; also when they are let go before every module is loaded. Under
    the bound (`rules`: a small project), a rule boundary lets go of nothing either (the
    later rules read what the earlier ones parsed: tests/test_rule_boundary_bodies.py)."""
    monkeypatch.setattr(bodies, "HELD_LINES", held)
    folder = tmp_path / "p"
    folder.mkdir()
    for name, text in {"factory.py": FACTORY, "model.py": MODEL, "loop.py": LOOP}.items():
        (folder / name).write_text(text)
    (folder / "train.py").write_text(TRAIN)
    parsed_again: list[str] = []
    original = bodies.parse_again

    def counted(node: ast.FunctionDef, lines: object) -> list[ast.stmt]:
        parsed_again.append(node.name)
        return original(node, lines)  # type: ignore[arg-type]

    monkeypatch.setattr(bodies, "parse_again", counted)
    letting_go = report(folder)
    # let go at the first rule and read by ACF006's search, where the bound lets go at all
    assert ("clip" in parsed_again) is (held == 0)
    assert "ACF006" in letting_go and "ACF002" in letting_go
    monkeypatch.setattr(bodies.Bodies, "let_go", lambda self, held=0: 0)
    assert report(folder) == letting_go


KEYWORDS = """\
X = 0


def plain():
    return "no keyword of interest here"


def declares(): global X; X = 1


def wraps(function):
    @functools.wraps(function)
    async def inner(*a):
        class Local:
            pass
        return function(*a)
    return inner


class Outer:
    def method(self):
        def helper():
            global X
            X = 2
        return helper

    def classy(self):
        return "class def global"  # the words in a string: gone into, nothing found
"""

KINDS = [
    (ast.ClassDef, b"class", 0),
    (ast.Global, b"global", 0),
    ((ast.FunctionDef, ast.AsyncFunctionDef), b"def", 1),
]


@pytest.mark.parametrize(("kind", "word", "own"), KINDS, ids=["class", "global", "def"])
def test_a_walk_for_a_keyword_finds_what_the_whole_walk_finds(
    kind: type, word: bytes, own: int, store: bodies.Bodies
) -> None:
    summary = made(KEYWORDS, store)
    plain = summary.top["plain"][0]
    store.let_go()
    found = [node for node in summary.walked_statements_with(word, own) if isinstance(node, kind)]
    assert isinstance(plain.__dict__["body"], bodies.Unread)  # not gone into: not read
    whole = [node for node in made(KEYWORDS).walked_statements() if isinstance(node, kind)]
    assert [ast.dump(node, include_attributes=True) for node in found] == [
        ast.dump(node, include_attributes=True) for node in whole
    ]
    assert found  # each kind is there, also on a `def` line (`global X; X = 1`)


CALLS = """\
def counts():
    plugins = []  # the word on lines with calls, none of them kept
    return len(plugins)


def makes(trainer_cls):
    return trainer_cls(
        plugins=[print("plugins")],
    )


class Holder:
    def adds(self):
        self.plugins.append(2)
"""


def gives_plugins(call: ast.Call) -> bool:
    return any(keyword.arg == "plugins" for keyword in call.keywords)


def test_calls_kept_read_only_the_bodies_of_the_calls_kept(store: bodies.Bodies) -> None:
    """The calls on the lines writing a word are looked for in bodies not read for good; the
    functions of the calls kept are read (the calls are their nodes), the others let go."""
    summary = made(CALLS, store)
    counts, makes = summary.top["counts"][0], summary.top["makes"][0]
    adds = summary.top["Holder"][0].body[0]  # type: ignore[attr-defined]
    assert store.let_go() == 3
    kept = summary.calls_kept(gives_plugins, "plugins")
    assert [ast.unparse(call.func) for call in kept] == ["trainer_cls"]
    assert type(makes) is ast.FunctionDef and any(node is kept[0] for node in ast.walk(makes))
    assert type(counts) is bodies.FunctionDef and type(adds) is bodies.FunctionDef
    assert store.let_go() == 2  # parsed again to be looked at, let go again
    plain = made(CALLS)
    whole = [ast.dump(call) for call in plain.calls_writing("plugins")]
    assert [ast.dump(call) for call in summary.calls_writing("plugins")] == whole
    assert len(whole) == 4  # len, trainer_cls, print, append: every body read now
    assert type(counts) is ast.FunctionDef and type(adds) is ast.FunctionDef
