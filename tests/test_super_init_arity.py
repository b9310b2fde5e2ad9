"""`super().__init__(...)` runs a base's `__init__` with exactly the arguments it writes (no
metaclass, `__new__` or partial between them): one that passes a keyword the searched
`__init__` has no parameter for, too many positional arguments, or leaves a parameter without
a default unfilled raises `TypeError` before its body runs (analysis/arguments.py
`super_init_binds_nothing`). The caller search of an `__init__` then neither binds its
arguments nor asks its class's bases (callers.py `super_inits_of`), whose modules were parsed
only to know whether the class derives from the searched one (NeMo: 158 -> 150 parses).

Checked by the report and by which files are summarised (their `ast` trees made), with the
collector off as the command runs; with the test off, the refused call gives its value and
the unrelated base's module is parsed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_setter_callers import checked

from amp_clipfix.analysis import arguments, callers

MODEL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self, fused):
        super().__init__()
        self._fused = fused

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=self._fused)
"""
TRAIN = """\
import lightning as L

from model import Model

model = Model(True)
L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(model)
"""
# A file that names `Model` (a candidate for its callers): a subclass whose `super()` call
# Python refuses (`Model.__init__` takes no `extra`), and a class of another base whose call
# `Model.__init__` would refuse too (no `size`): its base's module need not be read.
CHILD = """\
from model import Model
from remote import Remote


class Child(Model):
    def __init__(self):
        super().__init__({call})


class Other(Remote):
    def __init__(self):
        super().__init__(size=3)
"""
REMOTE = """\
class Remote:
    def __init__(self, size):
        self.size = size
"""
DECIDED = "ACF002 torch.optim.AdamW(fused=self._fused), decided here KNOWN"


def project(folder: Path, call: str) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN)
    (folder / "child.py").write_text(CHILD.format(call=call))
    (folder / "remote.py").write_text(REMOTE)
    return folder


def test_a_refused_super_init_is_no_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found, made = checked(project(tmp_path / "p", "False, extra=1"), monkeypatch)
    assert found == [DECIDED]  # `True` alone: the refused `False` never reaches `fused`
    assert "child.py" in made and "remote.py" not in made


def test_without_the_test_the_refused_call_gives_its_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mechanism is what decides: with the test off, the refused call's `False` joins the
    values and `Other`'s base is asked for (its module parsed)."""
    monkeypatch.setattr(callers, "super_init_binds_nothing", lambda *arguments: False)
    found, made = checked(project(tmp_path / "p", "False, extra=1"), monkeypatch)
    assert found != [DECIDED]
    assert "remote.py" in made


def test_a_super_init_that_fits_is_a_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused, _ = checked(project(tmp_path / "refused", "False, extra=1"), monkeypatch)
    fits, made = checked(project(tmp_path / "fits", "False"), monkeypatch)
    assert fits != refused  # `False` reaches `fused` through the subclass
    assert "remote.py" not in made  # `Other`'s call is refused either way


FUNCTIONS = """\
def plain(self, a, b=1): pass
def keywords(self, a, **kw): pass
def star(self, a, *rest): pass
def only(self, a, /, b=2): pass
def later(self, a=1, *, b): pass
def later_default(self, *, b=2): pass
def defaults_all(self=None, a=1): pass
@wraps
def decorated(self, a): pass
"""


@pytest.mark.parametrize(
    ("call", "name", "refused"),
    [
        ("super().__init__(1)", "plain", False),
        ("super().__init__(a=1, b=2)", "plain", False),
        ("super().__init__()", "plain", True),  # `a` has no default
        ("super().__init__(b=2)", "plain", True),
        ("super().__init__(1, 2, 3)", "plain", True),  # `self` is super()'s: two more at most
        ("super().__init__(1, c=3)", "plain", True),  # no `c`, no `**`
        ("super().__init__(*args)", "plain", False),  # a spread may fill any parameter
        ("super().__init__(**options)", "plain", False),
        ("super().__init__(1, c=3, **options)", "plain", True),  # `c` is refused whatever
        ("super().__init__(a=1, c=2)", "keywords", False),
        ("super().__init__(c=2)", "keywords", True),  # `a` unfilled
        ("super().__init__(1, 2, 3)", "star", False),
        ("super().__init__(a=1, b=2)", "only", True),  # positional-only by keyword
        ("super().__init__(1)", "only", False),
        ("super().__init__()", "later", True),  # keyword-only `b` without a default
        ("super().__init__(b=1)", "later", False),
        ("super().__init__()", "later_default", False),
        ("super().__init__()", "defaults_all", False),  # `self`'s default counted as one
        ("super().__init__(1, c=2)", "decorated", False),  # the wrapper takes the call
    ],
)
def test_which_super_inits_bind_nothing(call: str, name: str, refused: bool) -> None:
    function = defined(FUNCTIONS, name)
    written = ast.parse(call, mode="eval").body
    assert isinstance(written, ast.Call)
    assert arguments.super_init_binds_nothing(written, function, defined(METHODS, "a")) is refused


def defined(text: str, name: str) -> ast.FunctionDef:
    return next(
        node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef) and node.name == name
    )


# Where `super()` is written: only an undecorated instance method gives the base `self`.
METHODS = """\
def a(self): pass
@classmethod
def b(cls): pass
def __new__(cls): pass
def __init_subclass__(cls): pass
@decorated
def c(self): pass
def d(*args): pass
"""


@pytest.mark.parametrize(
    ("call", "method", "refused"),
    [
        ("super().__init__(1, 2)", "a", True),  # `self` from super(): one positional too many
        ("super(C, self).__init__(1, 2)", "a", True),
        ("super(C, obj).__init__(1, 2)", "a", False),  # another object: may be a class
        ("super(C).__init__(1, 2)", "a", False),  # an unbound super object
        ("super().__init__(1, 2)", "b", False),  # a classmethod: `self` may be written
        ("super().__init__(1, 2)", "__new__", False),
        ("super().__init__(1, 2)", "__init_subclass__", False),
        ("super().__init__(1, 2)", "c", False),
        ("super().__init__(1, 2)", "d", False),  # no first parameter
    ],
)
def test_where_super_gives_self(call: str, method: str, refused: bool) -> None:
    written = ast.parse(call, mode="eval").body
    assert isinstance(written, ast.Call)
    init = defined("def __init__(self, a): pass", "__init__")
    assert arguments.super_init_binds_nothing(written, init, defined(METHODS, method)) is refused
    assert arguments.super_init_binds_nothing(written, init, None) is False  # not a method
