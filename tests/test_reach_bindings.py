"""Which bindings make ACF004's reach gate (analysis/reach.py, analysis/bound_names.py) ask about
an attribute call `x.name(...)`: only a binding that can give some object's attribute `name` a
value that may be called. Each such form keeps the call asked and the finding through it found;
a local name, a message's prose, a `getattr` string or a value that is never callable does not,
and the output is the same as with every call asked about."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_reach import check, write
from tests.test_reach import test_what_gives_an_attribute_a_value as binds_as

OPS = """\
import torch


def clip(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
"""

# `run` reads the attribute `after_backward` of a parameter: its value is followed through the
# callers of `run`; the project defines no function `after_backward`.
TRAIN = """\
import torch
from torch.nn.utils import clip_grad_norm_

{imports}


def run(hooks, model, optimizer, scaler, batches):
    for batch in batches:
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        hooks.after_backward(model)
        scaler.step(optimizer)
        scaler.update()


def evaluate(model):
    clip_grad_norm_(model.parameters(), 1.0)


def main():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    run({hooks}, model, optimizer, scaler, [torch.randn(2)])
"""

MADE = "from hooks import make_hooks"

# hooks.py, the imports of train.py, the hooks it hands to `run`, and whether the evaluator
# follows the attribute to ops.clip (the finding); every one of them is asked about.
BINDING = {
    "keyword": (
        "from types import SimpleNamespace\nfrom ops import clip\n\n\n"
        "def make_hooks():\n    return SimpleNamespace(after_backward=clip)\n",
        MADE,
        "make_hooks()",
        True,
    ),
    "dict_key_spread": (
        "from types import SimpleNamespace\nfrom ops import clip\n\n\n"
        "def make_hooks():\n    return SimpleNamespace(**{'after_backward': clip})\n",
        MADE,
        "make_hooks()",
        True,
    ),
    "class_body": (
        "from ops import clip\n\n\nclass Hooks:\n    after_backward = staticmethod(clip)\n\n\n"
        "def make_hooks():\n    return Hooks()\n",
        MADE,
        "make_hooks()",
        False,
    ),
    "attribute_store": (
        "from types import SimpleNamespace\nfrom ops import clip\n\n\n"
        "def make_hooks():\n    hooks = SimpleNamespace()\n"
        "    hooks.after_backward = clip\n    return hooks\n",
        MADE,
        "make_hooks()",
        False,
    ),
    "init_stores_parameter": (
        "from ops import clip\n\n\nclass Hooks:\n    def __init__(self, after_backward):\n"
        "        self.after_backward = after_backward\n\n\n"
        "def make_hooks():\n    return Hooks(clip)\n",
        MADE,
        "make_hooks()",
        True,
    ),
    "setattr_literal": (
        "from types import SimpleNamespace\nfrom ops import clip\n\n\n"
        "def make_hooks():\n    hooks = SimpleNamespace()\n"
        "    setattr(hooks, 'after_backward', clip)\n    return hooks\n",
        MADE,
        "make_hooks()",
        False,
    ),
    "module_level": (
        "from ops import clip\n\nafter_backward = clip\n",
        "import hooks",
        "hooks",
        True,
    ),
    "module_renamed_import": (
        "from ops import clip as after_backward\n",
        "import hooks",
        "hooks",
        True,
    ),
    "global_in_function": (
        "from ops import clip\n\n\ndef install():\n    global after_backward\n"
        "    after_backward = clip\n",
        "import hooks",
        "hooks",
        False,
    ),
}

# hooks.py writes `after_backward` only where no attribute of an object can get it as a
# callable; the hooks `run` is given have no such attribute.
LOCAL = {
    "local_variable": "def make_hooks():\n    after_backward = clip\n    return after_backward\n",
    "for_target": "def make_hooks():\n    for after_backward in [clip]:\n        pass\n",
    "parameter": "def wrap(after_backward):\n    return after_backward\n",
    "message_prose": "def make_hooks():\n    raise ValueError(f'no after_backward for {clip}')\n",
    "logged_prose": "import logging\n\nlogging.info('after_backward: not set')\n",
    "help_text": "import argparse\n\nargparse.ArgumentParser().add_argument("
    "'--x', help='runs after_backward')\n",
    "getattr_string": "def make_hooks(hooks):\n    return getattr(hooks, 'after_backward', None)\n",
    "hasattr_string": "def make_hooks(hooks):\n    return hasattr(hooks, 'after_backward')\n",
    "inert_keyword": "from types import SimpleNamespace\n\n"
    "def make_hooks():\n    return SimpleNamespace(after_backward=None)\n",
    "inert_attribute": "def make_hooks(hooks):\n    hooks.after_backward = 0\n",
    "inert_class_body": "class Hooks:\n    after_backward = []\n",
    "inert_dict_value": "def make_hooks():\n    return {'after_backward': [], 'other': 1}\n",
    "tuple_target": "def make_hooks():\n    other, after_backward = clip, clip\n",
    "star_import": "from ops import *\n",
}


def project(root: Path, hooks: str, imports: str = "from hooks import make_hooks") -> None:
    expression = "hooks" if imports == "import hooks" else "make_hooks()"
    if "def make_hooks():" not in hooks and imports != "import hooks":
        hooks += "\n\ndef make_hooks():\n    return object()\n"
    train = TRAIN.format(imports=imports, hooks=expression)
    write(root, {"ops.py": OPS, "hooks.py": "from ops import clip\n\n" + hooks, "train.py": train})


@pytest.mark.parametrize("form", sorted(BINDING))
def test_a_binding_that_makes_an_attribute_keeps_the_call_asked(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks, imports, expression, found = BINDING[form]
    train = TRAIN.format(imports=imports, hooks=expression)
    write(tmp_path, {"ops.py": OPS, "hooks.py": hooks, "train.py": train})

    code, output, asked = check(tmp_path, monkeypatch)

    assert "hooks.after_backward" in asked
    if found:
        assert code == 1, output
        assert "ops.py:5:5: ACF004" in output
        assert "step: train.py:12 `scaler.step(optimizer)`" in output
    monkeypatch.undo()
    assert check(tmp_path, monkeypatch, gate=False)[:2] == (code, output)


@pytest.mark.parametrize("form", sorted(LOCAL))
def test_a_local_or_inert_binding_leaves_the_call_unasked(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path, LOCAL[form])

    code, output, asked = check(tmp_path, monkeypatch)

    assert "hooks.after_backward" not in asked
    assert code == 0, output
    monkeypatch.undo()
    ungated = check(tmp_path, monkeypatch, gate=False)
    assert "hooks.after_backward" in ungated[2]
    assert ungated[:2] == (code, output)


@pytest.mark.parametrize(
    ("source", "bound"),
    [
        ("raise ValueError('call item first')\n", False),
        ("print('item', 'count')\n", True),  # a bare word: it may name an attribute
        ("getattr(x, 'item')()\n", False),
        ("setattr(x, 'item', f)\n", True),
        ("namedtuple('T', 'item other')\n", True),
        ("parser.add_argument('--item', help='an item')\n", True),  # the dest
        ("parser.add_argument('--x', help='an item')\n", False),
        ("ValueError = f\nValueError('an item')\n", True),  # not the builtin
        ("f(item=None)\n", False),
        ("f(item=g)\n", True),
        ("x.item = 0\n", False),
        ("x.item: int = 0\n", False),
        ("class A:\n    item: Callable = None\n", True),  # a field: `A(f)` gives it
        ("class A:\n    item = None\n", False),
        ("x.item += 1\n", True),
        ("a, x.item = 0, f\n", True),
        ("d = {'item': [], 'b': 1}\n", False),
        ("d = {'item': f}\n", True),
        ("d = {'item': [f][0]}\n", True),
        ("def f():\n    a, item = g()\n", False),
        ("from m import *\n", False),
        ("x.item = None\ny.item = g\n", True),
    ],
)
def test_what_gives_an_attribute_a_callable_value(source: str, bound: bool) -> None:
    binds_as(source, bound)  # the file's names, and the scan's test of its text
