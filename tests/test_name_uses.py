"""One walk (analysis/name_uses.py) answers the four questions of where a module writes a name:
name_uses.called_only (only called?), clip_values.stored_names (stored under which names?),
module_objects.written_as_value (written as a value?) and written_events.hands_backward_on (a
`backward` attribute handed on?). Each program pins all four answers, as each question gave
them with a walk of its own (the table passes on main a24f160's separate walks too), so the
fold keeps every answer on the programs that tell the questions apart: renamed imports,
values handed on, aliases, stores, `global`, strings, NFKC spellings."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis.clip_values import stored_names
from amp_clipfix.analysis.module_objects import written_as_value
from amp_clipfix.analysis.name_uses import called_only
from amp_clipfix.analysis.written_events import hands_backward_on

CLIP = frozenset({"clip_grad_norm_", "clip_grad_value_"})
NAME = "clip_grad_norm_"

# program, called_only's calls (as their lines) or None, stored_names, written_as_value
CASES = [
    ("import torch\ntorch.nn.utils.clip_grad_norm_(p, 1)\n", [2], set(), False),
    ("from torch.nn.utils import clip_grad_norm_\nclip_grad_norm_(p, 1)\n", [2], set(), False),
    ("from torch.nn.utils import clip_grad_norm_ as clip_grad_norm_\n", [], set(), False),
    ("from torch.nn.utils import clip_grad_norm_ as clip\nclip(p, 1)\n", None, {"clip"}, True),
    ("import torch.nn.utils.clip_grad_norm_ as c\n", None, {"c"}, True),
    ("import torch\nf = torch.nn.utils.clip_grad_norm_\nf(p, 1)\n", None, {"f"}, True),
    ("a = b = clip_grad_norm_\n", None, {"a", "b"}, True),
    ("class M:\n    def s(self):\n        self.f: object = clip_grad_norm_\n", None, {"f"}, True),
    ("x, y = clip_grad_norm_, 1\n", None, None, True),
    ("items[0] = clip_grad_norm_\n", None, None, True),
    ("f = clip_grad_norm_ or None\n", None, None, True),
    ("run(clip_grad_norm_)\n", None, None, True),
    ("run(key=torch.nn.utils.clip_grad_norm_)\n", None, None, True),
    ("@clip_grad_norm_\ndef f():\n    pass\n", None, None, True),
    ("partial(clip_grad_norm_, max_norm=1)(p)\n", None, None, True),
    ("getattr(utils, 'clip_grad_norm_')(p, 1)\n", None, None, True),
    ("s = 'clip_grad_norm_'\n", None, None, True),
    ("clip_grad_norm_ = None\n", None, set(), False),
    ("del clip_grad_norm_\n", None, set(), False),
    ("obj.clip_grad_norm_ = None\n", None, set(), True),
    ("del obj.clip_grad_norm_\n", None, set(), True),
    ("def f():\n    global clip_grad_norm_\n    clip_grad_norm_(p, 1)\n", [3], set(), True),
    ("def clip_grad_norm_(p, n):\n    return n\n", [], set(), False),
    ("def f(clip_grad_norm_=1):\n    return 0\n", [], set(), False),
    ("run(clip_grad_norm_=1)\n", [], set(), False),
    ("(clip_grad_norm_)(p, 1)\n", [1], set(), False),
    ("clip_grad_norm_(p, 1)(clip_grad_norm_)\n", None, None, True),
    ("clip_grad_value_(p, 1)\nf = clip_grad_value_\n", None, {"f"}, False),
    # NFKC: Python reads a fullwidth identifier as its normal form; a string stays as written
    ("\uff43lip_grad_norm_(p, 1)\n", [1], set(), False),
    ("f = \uff43lip_grad_norm_\n", None, {"f"}, True),
    ("getattr(utils, '\uff43lip_grad_norm_')\n", [], set(), False),
    ("print('nothing here')\n", [], set(), False),
]


@pytest.mark.parametrize(("source", "calls", "stored", "as_value"), CASES)
def test_each_question_keeps_its_answer(
    source: str, calls: list[int] | None, stored: set[str] | None, as_value: bool
) -> None:
    tree = ast.parse(source)
    found = called_only(tree, CLIP)
    assert (None if found is None else [call.lineno for call in found]) == calls
    assert stored_names(tree, CLIP) == stored
    assert written_as_value(tree, NAME) is as_value


def test_calls_come_in_the_walks_order() -> None:
    """Breadth first: an outer call before the calls in its arguments, each level in order."""
    source = "clip_grad_norm_(clip_grad_value_(p, 1), 2)\nclip_grad_value_(q, 3)\n"
    found = called_only(ast.parse(source), CLIP)
    assert found is not None
    assert [ast.unparse(call.args[1]) for call in found] == ["2", "3", "1"]


@pytest.mark.parametrize(
    ("source", "hands_on"),
    [
        ("fabric.backward(loss)\n", False),
        ("f = fabric.backward\n", True),
        ("self.f = fabric.backward\n", True),
        ("run(fabric.backward)\n", True),
        ("fabric.backward = patched\n", True),
        ("del fabric.backward\n", True),
        ("backward = run\nrun(backward)\n# fabric.backward\n", False),
        ("from torch.autograd import backward as b\nrun(b)\n# .backward\n", False),
        ("getattr(fabric, 'backward')\n# x.backward\n", False),
        ("fabric.backward(fabric.backward)\n", True),
    ],
)
def test_a_backward_attribute_handed_on(source: str, hands_on: bool) -> None:
    assert hands_backward_on(Path("m.py"), source.encode()) is hands_on


def test_written_as_value_asks_one_name_only() -> None:
    """The other clip's name written as a value says nothing of `clip_grad_norm_`."""
    tree = ast.parse("f = clip_grad_value_\nclip_grad_norm_(p, 1)\n")
    assert written_as_value(tree, NAME) is False
    assert written_as_value(tree, "clip_grad_value_") is True
