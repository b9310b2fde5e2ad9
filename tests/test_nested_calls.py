"""A function nested in another and only ever called there (analysis/nested_calls.py): its
callers are looked for only in the function that defines it. The values of its parameters
and the reports equal those of the search that evaluates every call of its name in the module,
on programs where the function stays inside and where it leaves: returned, passed, stored,
aliased, decorated, made global or nonlocal, put in a partial, a lambda, a default, a
comprehension, a string or an f-string, read through an NFKC spelling of its name."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import write

from amp_clipfix.analysis import callers, nested_calls
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.values import ClsV, Ext, Fn, Inst, Lit, Opaque, Opt
from amp_clipfix.cli import main

SOURCE = """\
import functools
import torch

HOLDER = object()
REGISTRY = []


def keep(function):
    REGISTRY.append(function)
    return function


class Stepper:
    def step(self, closure=None):
        closure(torch.optim.Adagrad([]))


def elsewhere(closure):
    closure(torch.optim.Adam([]))


def outer(opt_a):
{global_}
    def closure(opt):
        return opt

    closure(opt_a)
{escape}
    return None


outer(torch.optim.SGD([], lr=0.1))
{after}
"""

# What each program does with `closure` inside `outer` (`{escape}`), and after it at the
# module's level (`{after}`); `{global_}` declares it global.
ESCAPES: dict[str, tuple[str, str]] = {
    "called only": ("    closure(torch.optim.RMSprop([]))", "Stepper().step(elsewhere)"),
    "called in a nested function": (
        "    def inner():\n        closure(torch.optim.RMSprop([]))\n    inner()",
        "",
    ),
    "called in a lambda": ("    run = lambda: closure(torch.optim.RMSprop([]))\n    run()", ""),
    "called in a comprehension": ("    [closure(o) for o in (torch.optim.RMSprop([]),)]", ""),
    "passed": ("    elsewhere(closure)", ""),
    "passed to a method": ("    Stepper().step(closure)", ""),
    "passed spread": ("    elsewhere(*[closure])", ""),
    "returned": ("    return closure", "closure = outer(1)\nclosure(torch.optim.Adam([]))"),
    "yielded": ("    yield closure", ""),
    "stored": ("    HOLDER.closure = closure", "HOLDER.closure(torch.optim.Adam([]))"),
    "in a list": ("    REGISTRY.append(closure)", "REGISTRY[0](torch.optim.Adam([]))"),
    "in a dict": ("    table = {'closure': closure}\n    table['closure'](1)", ""),
    "aliased": ("    other = closure\n    elsewhere(other)", ""),
    "walrus": ("    elsewhere(c := closure)", ""),
    "partial": ("    elsewhere(functools.partial(closure))", ""),
    "in a lambda": ("    elsewhere(lambda o: closure(o))\n    elsewhere(lambda: closure)", ""),
    "in a default": ("    def inner(cb=closure):\n        elsewhere(cb)\n    inner()", ""),
    "in a comprehension": ("    [elsewhere(c) for c in (closure,)]", ""),
    "in a class body": ("    class Box:\n        fn = closure\n    elsewhere(Box.fn)", ""),
    "a string": ("    elsewhere(locals()['closure'])", ""),
    "an f-string": ("    print(f'{closure!r}')", ""),
    "NFKC spelling": ("    elsewhere(\uff43losure)", ""),
    "nonlocal": (
        "    def inner():\n        nonlocal closure\n        closure = elsewhere\n    inner()",
        "",
    ),
    "rebound": ("    closure = elsewhere\n    closure(torch.optim.Adam([]))", ""),
    "another def": ("    def closure(opt):\n        return opt", ""),
    "deleted": ("    del closure", ""),
    "global": ("", "def later():\n    closure(torch.optim.Adam([]))\n\n\nlater()"),
}
DECORATED = "called only"  # also written with `@keep` on the nested function


def program(name: str, decorated: bool = False) -> str:
    escape, after = ESCAPES[name]
    global_ = "    global closure" if name == "global" else ""
    source = SOURCE.format(escape=escape, after=after, global_=global_)
    if decorated:
        source = source.replace("    def closure(opt):", "    @keep\n    def closure(opt):", 1)
    return source


def described(value: object) -> str:
    """A value as a test can compare it across two evaluators."""
    if isinstance(value, Opt):
        return f"Opt:{ast.unparse(value.call)}"
    if isinstance(value, (Inst, ClsV)):
        node = value.cls.node if isinstance(value, Inst) else value.node
        return f"{type(value).__name__}:{node.name}"
    if isinstance(value, Ext):
        return f"Ext:{value.qname}"
    if isinstance(value, Fn):
        return f"Fn:{value.node.name}:{value.node.lineno}"
    if isinstance(value, (Opaque, Lit)):
        where = getattr(value.node, "lineno", None)
        return f"{type(value).__name__}:{where}:{ast.dump(value.node)}"
    return type(value).__name__


def one_module(root: Path, source: str) -> tuple[Evaluator, Summary]:
    """`source` written as `train.py` (UTF-8) in `root`, a fresh evaluator and its summary."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "train.py"
    path.write_bytes(source.encode("utf-8"))
    evaluator = project_evaluator(
        root, {path: source.encode("utf-8")}, lambda p: summarise(root, p, source)
    )
    summary = evaluator.summary(path)
    assert summary is not None
    return evaluator, summary


def opt_values(tmp_path: Path, source: str) -> tuple[list[str], list[int]]:
    """What `opt` in `return opt` may hold, and the lines of the calls whose callee the
    caller search evaluated to learn whether they call `closure`."""
    evaluator, summary = one_module(tmp_path, source)
    (function,) = [
        n for n in ast.walk(summary.tree) if isinstance(n, ast.FunctionDef) and n.name == "closure"
    ][:1]
    (returned,) = [n for n in function.body if isinstance(n, ast.Return)]
    asked: list[int] = []
    calls_function = evaluator.calls_function

    def spied(call: ast.Call, caller: Ctx, fn: ast.AST, cls: ast.ClassDef | None) -> bool:
        asked.append(call.lineno)
        return calls_function(call, caller, fn, cls)

    evaluator.calls_function = spied  # type: ignore[method-assign, assignment]
    node = returned.value
    assert node is not None
    values = evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))
    return sorted(described(v) for v in values), asked


def no_gate(summary: object, function: object) -> None:
    return None  # every call of the name in the module asked, as before nested_calls.py


CASES = [(name, False) for name in sorted(ESCAPES)] + [(DECORATED, True)]


@pytest.mark.parametrize(("name", "decorated"), CASES)
def test_the_values_equal_those_of_every_call_asked(
    name: str, decorated: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = program(name, decorated)
    gated, _ = opt_values(tmp_path / "gated", source)
    monkeypatch.setattr(callers, "calling_scopes", no_gate)
    every, _ = opt_values(tmp_path / "every", source)
    assert gated == every
    assert any("SGD" in v for v in gated) or "global" in name or name == "rebound"


@pytest.mark.parametrize(
    "name", ["passed", "passed to a method", "NFKC spelling", "aliased", "global", "returned"]
)
def test_a_function_that_leaves_is_called_where_it_goes(tmp_path: Path, name: str) -> None:
    """The programs where the value leaves `outer` and is called elsewhere: the gate stays
    open and the call elsewhere gives `opt` its optimizer (the tests above are not vacuous)."""
    values, _ = opt_values(tmp_path, program(name))
    assert any("Adam" in v or "Adagrad" in v for v in values), values


@pytest.mark.parametrize("decorated", [False, True])
def test_the_calls_of_the_name_elsewhere_are_not_asked(tmp_path: Path, decorated: bool) -> None:
    """`closure(...)` in `Stepper.step` and `elsewhere` cannot call `outer`'s `closure`, which
    never leaves `outer`: their callees are not evaluated (with a decorator, which gets the
    function, they are)."""
    source = program("called only", decorated)
    values, asked = opt_values(tmp_path, source)
    lines = source.splitlines()
    outside = [i for i, line in enumerate(lines, 1) if "closure(torch.optim.Ada" in line]
    assert len(outside) == 2
    if decorated:
        assert set(outside) <= set(asked)
    else:
        assert not set(outside) & set(asked)
        assert asked  # the calls inside `outer` are asked
    assert any("SGD" in v for v in values) and any("RMSprop" in v for v in values)


def test_which_functions_are_narrowed(tmp_path: Path) -> None:
    source = """\
class A:
    def method(self):
        def inner():
            pass
        inner()
        return 1

    @staticmethod
    def static():
        pass


def top():
    pass


def outer():
    if True:
        def nested():
            pass
    nested()
    class Local:
        def meth(self):
            pass
    Local().meth()
"""
    _, summary = one_module(tmp_path, source)
    functions = {n.name: n for n in ast.walk(summary.tree) if isinstance(n, ast.FunctionDef)}
    scopes = {name: nested_calls.calling_scopes(summary, f) for name, f in functions.items()}
    assert scopes["inner"] == frozenset({id(functions["method"]), id(functions["inner"])})
    assert scopes["nested"] is not None and id(functions["outer"]) in scopes["nested"]
    assert scopes["method"] is None and scopes["static"] is None and scopes["top"] is None
    assert scopes["meth"] is None  # a method, reached through its class
    assert scopes["outer"] is None


MANUAL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()

        def closure(o):
            loss = self.layer(batch).sum()
            o.zero_grad()
            self.manual_backward(loss)
            torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)

        {use}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Stepper:
    def step(self, closure=None):
        closure()


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""


def report(root: Path) -> tuple[int, str]:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "use",
    [
        "closure(opt)\n        opt.step()",
        "opt.step(closure=lambda: closure(opt))",
        "opt.step(closure=closure)",
        "Stepper().step(closure)\n        opt.step()",
    ],
)
def test_the_report_equals_that_of_every_call_asked(
    use: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", MANUAL.replace("{use}", use))
    gated = report(tmp_path)
    monkeypatch.setattr(callers, "calling_scopes", no_gate)
    every = report(tmp_path)
    assert gated == every
    codes = [finding["code"] for finding in json.loads(gated[1])["findings"]]
    if use.startswith("closure(opt)"):
        assert codes == ["ACF005"]  # the clip in the closure, before the step
