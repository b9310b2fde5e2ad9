"""A call that passes a function an argument it has no parameter for raises `TypeError` before
the function's body runs, so it is none of the function's callers (analysis/arguments.py
`binds_nothing`): the caller search does not ask what its callee is, and it gives the
function's parameters no value. `loss.backward(inputs=x)` beside a project's
`backward(self, loss, optimizer)` cost ColossalAI thousands of evaluations per question."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_method_callers import MODEL
from test_setter_callers import checked

from amp_clipfix.analysis import arguments, callers

TRAIN = """\
import lightning as L

from model import Model

model = Model()
model.set_fused(True)
{}
L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(model)
"""
# A second call on the same instance that Python refuses: `fused=False` never reaches the
# method, so the value stays the first call's.
REFUSED = "model.set_fused(False, inplace=True)"
DECIDED = "ACF002 torch.optim.AdamW(fused=self._fused), decided here KNOWN"


def project(folder: Path, extra: str) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN.format(extra))
    return folder


def asked_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The calls whose callee the caller search asks for, as written."""
    asked: list[str] = []
    original = callers.CallerIndex.calls_function

    def watched(self, call, caller, function, cls):  # noqa: ANN001, ANN202
        asked.append(ast.unparse(call))
        return original(self, call, caller, function, cls)

    monkeypatch.setattr(callers.CallerIndex, "calls_function", watched)
    return asked


def test_a_call_python_refuses_is_no_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = asked_calls(monkeypatch)
    found, _ = checked(project(tmp_path / "p", REFUSED), monkeypatch)
    assert found == [DECIDED]  # as with no second call at all
    assert "model.set_fused(True)" in asked
    assert REFUSED not in asked


def test_without_the_test_the_refused_call_gives_its_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mechanism is what decides: with the test off the refused call is asked and its
    `False` joins the values (the finding is no longer decided by `True` alone)."""
    monkeypatch.setattr(callers, "binds_nothing", lambda call, function: False)
    asked = asked_calls(monkeypatch)
    found, _ = checked(project(tmp_path / "p", REFUSED), monkeypatch)
    assert REFUSED in asked
    assert found != [DECIDED]


FUNCTIONS = """\
def plain(a, b=1): pass
def keywords(a, **kw): pass
def star(a, *rest): pass
def only(a, /, b): pass
def later(a, *, b): pass
class C:
    def method(self, loss, optimizer): pass
    def __init__(self, a): pass
    @staticmethod
    def decorated(a): pass
"""


@pytest.mark.parametrize(
    ("call", "name", "refused"),
    [
        ("f(1)", "plain", False),
        ("f(1, b=2)", "plain", False),
        ("f(1, c=2)", "plain", True),  # no parameter `c`, no `**`
        ("f(1, 2, 3)", "plain", True),  # three positional, two parameters, no `*`
        ("f(1, 2, *more)", "plain", False),  # the `*` may be empty: not counted
        ("f(1, *more, 3)", "plain", False),
        ("f(1, **options)", "plain", False),  # a `**` may hold anything the function takes
        ("f(a=1, c=2)", "keywords", False),
        ("f(1, 2, 3, 4)", "star", False),
        ("f(1, c=2)", "star", True),
        ("f(a=1, b=2)", "only", True),  # a positional-only parameter by keyword
        ("f(1, b=2)", "only", False),
        ("f(1, 2)", "later", True),  # `b` is keyword-only
        ("f(1, b=2)", "later", False),
        ("x.f(inputs=x)", "method", True),  # `loss.backward(inputs=...)`
        ("x.f(loss, opt)", "method", False),
        ("C.f(obj, loss, opt)", "method", False),  # unbound: `self` passed, counted
        ("x.f(obj, loss, opt, extra)", "method", True),
        ("f()", "method", False),  # too few: a partial may add them (not asked)
        ("C(1, 2, 3, c=4)", "__init__", False),  # an instantiation: `__new__`, a metaclass
        ("x.f(1, 2, c=3)", "decorated", False),  # the decorator's wrapper takes the call
    ],
)
def test_which_calls_bind_nothing(call: str, name: str, refused: bool) -> None:
    tree = ast.parse(FUNCTIONS)
    function = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name
    )
    written = ast.parse(call, mode="eval").body
    assert isinstance(written, ast.Call)
    assert arguments.binds_nothing(written, function) is refused
