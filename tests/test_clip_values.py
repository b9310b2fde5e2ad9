"""torch's clip held as a value (analysis/clip_values.py) and a reading's quiet last statement
(order.quiet_tail), in ACF004's search: where the clip is stored whole under names
(`self.clip_func = torch.nn.utils.clip_grad_norm_`, a renamed import), only calls spelled with
one of those names are asked whether they are the clip; the helpers of a reading's last
statement are not entered when nothing there can make a finding. Each finding is still found,
with the same output as with every call asked about."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis import clip_values, order, reach
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES
from amp_clipfix.rules import acf004
from tests.test_reach import check, write

WRAPPER = """\
import torch


def summary(loss):
    return loss.detach()


class Wrapper:
    def __init__(self, optimizer, clip_type):
        self.optimizer = optimizer
        self.settings = {}
        if clip_type == "norm":
            self.clip_func = torch.nn.utils.clip_grad_norm_
        else:
            self.clip_func = torch.nn.utils.clip_grad_value_
        self.scaler = torch.amp.GradScaler("cuda")

    def configure(self, clip_grad_kwargs):
        self.kwargs = clip_grad_kwargs
        self.settings.update(clip_grad_kwargs)

    def update(self, loss, params):
        self.scaler.scale(loss).backward()
        print(summary(loss).item())
        {clip}
        self.scaler.step(self.optimizer)
        self.scaler.update()
"""

TRAIN = """\
import torch

from wrapper import Wrapper


def run(wrapper, model, batches):
    for batch in batches:
        loss = model(batch).sum()
        wrapper.update(loss, model.parameters())


def main():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    run(Wrapper(optimizer, "norm"), model, [torch.randn(2)])
"""

STORED = "self.clip_func(params, 1.0)"
READ_ON = "clip = self.clip_func\n        clip(params, 1.0)"


def clip_line(wrapper: str) -> int:
    """The line of the clip call in the wrapper's text (the finding's line)."""
    lines = wrapper.splitlines()
    return next(i for i, line in enumerate(lines, 1) if "(params, 1.0)" in line)


def clip_asked(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The callees (as written) ACF004 asks whether they are torch's clip, filled as it runs."""
    asked: set[str] = set()
    is_torch_clip = acf004.is_torch_clip

    def noted(facts, file, call):  # type: ignore[no-untyped-def]
        asked.add(file.code(call.func))
        return is_torch_clip(facts, file, call)

    monkeypatch.setattr(acf004, "is_torch_clip", noted)
    return asked


def found(
    root: Path, monkeypatch: pytest.MonkeyPatch, wrapper: str
) -> tuple[str, set[str], set[str]]:
    """`check` over the wrapper and TRAIN, its ACF004 finding at the clip asserted: the output,
    the callees asked whether they are torch's clip, and every callee asked about."""
    write(root, {"wrapper.py": wrapper, "train.py": TRAIN})
    clips = clip_asked(monkeypatch)
    code, output, asked = check(root, monkeypatch)
    assert code == 1, output
    assert f"wrapper.py:{clip_line(wrapper)}:9: ACF004" in output
    return output, clips, asked


def ungated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call asked about and every helper entered, as before the gate and the tail."""
    monkeypatch.setattr(reach.CallReach, "call_runs", lambda *a: True)
    monkeypatch.setattr(reach.CallReach, "may_hold_instance", lambda *a: True)
    monkeypatch.setattr(reach.CallReach, "may_be_clip", lambda *a: True)
    monkeypatch.setattr(order, "quiet_tail", lambda *a: None)


@pytest.mark.parametrize("clip", [STORED, READ_ON])
def test_a_clip_stored_under_a_name_is_found_where_that_name_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clip: str
) -> None:
    output, clips, asked = found(tmp_path, monkeypatch, WRAPPER.replace("{clip}", clip))

    assert "step: wrapper.py:2" in output
    # only a call spelled with a name the clip is stored under is asked whether it is one
    assert clip.split("(")[0].split()[-1] in clips
    assert "summary(loss).item" not in clips
    assert "self.scaler.update" not in clips
    # the last statement of `configure`: no clip before it, none of its own
    assert "self.settings.update" not in asked


@pytest.mark.parametrize("clip", [STORED, READ_ON])
def test_the_same_output_when_every_call_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clip: str
) -> None:
    write(tmp_path, {"wrapper.py": WRAPPER.replace("{clip}", clip), "train.py": TRAIN})
    gated = check(tmp_path, monkeypatch)
    monkeypatch.undo()
    ungated(monkeypatch)

    code, output, asked = check(tmp_path, monkeypatch)

    assert (code, output) == gated[:2]
    assert {"summary(loss).item", "self.settings.update"} <= asked


def test_a_renamed_import_of_the_clip_is_called_by_its_new_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = WRAPPER.replace("{clip}", "clip(params, 1.0)").replace(
        "import torch\n", "import torch\nfrom torch.nn.utils import clip_grad_norm_ as clip\n", 1
    )
    _, clips, _ = found(tmp_path, monkeypatch, wrapper)

    assert "clip" in clips
    assert "summary(loss).item" not in clips


def test_a_clip_handed_on_otherwise_asks_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passed to a function (here a partial), the clip may be any call's callee."""
    wrapper = WRAPPER.replace("{clip}", "self.clip_func(params, 1.0)").replace(
        "= torch.nn.utils.clip_grad_norm_", "= functools.partial(torch.nn.utils.clip_grad_norm_)"
    )
    _, clips, _ = found(tmp_path, monkeypatch, "import functools\n" + wrapper)

    assert "summary(loss).item" in clips


def test_a_step_in_the_last_statement_after_a_clip_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last statement is entered when a clip comes before it: its helper's step makes the
    finding."""
    wrapper = WRAPPER.replace("{clip}", STORED).replace(
        "        self.scaler.step(self.optimizer)\n        self.scaler.update()\n",
        "        self.finish()\n\n    def finish(self):\n"
        "        self.scaler.step(self.optimizer)\n        self.scaler.update()\n",
    )
    _, _, asked = found(tmp_path, monkeypatch, wrapper)

    assert "self.finish" in asked


def names(source: str) -> frozenset[str] | None:
    path = Path("/project/m.py")
    contents = {path: source.encode()}
    return clip_values.clip_names(contents, lambda _: ast.parse(source))


@pytest.mark.parametrize(
    ("source", "stored"),
    [
        ("import torch\ntorch.nn.utils.clip_grad_norm_(p, 1.0)\n", set()),
        ("self.clip_func = torch.nn.utils.clip_grad_value_\n", {"clip_func"}),
        ("class A:\n    clip = torch.nn.utils.clip_grad_norm_\n", {"clip"}),
        ("a = b = clip_grad_norm_\n", {"a", "b"}),
        ("f: object = clip_grad_norm_\n", {"f"}),
        ("from torch.nn.utils import clip_grad_norm_ as c\n", {"c"}),
        ("clip_grad_norm_ = my_clip\n", set()),  # a store to the name hands nothing on
        ("x = clip_grad_norm_\ny = x\n", {"x", "y"}),  # read on, followed
        ("x = clip_grad_norm_\nrun(x)\n", None),  # then passed to a function
        ("run(clip_grad_norm_)\n", None),
        ("x, y = clip_grad_norm_, 1\n", None),  # a tuple
        ("d['c'] = clip_grad_norm_\n", None),  # an item
        ("def f(c=clip_grad_norm_):\n    pass\n", None),  # a default
        ("def f():\n    return clip_grad_norm_\n", None),
        ("f = lambda: clip_grad_norm_\n", None),
        ("x = clip_grad_norm_\nok = getattr(m, 'x')\n", None),  # a string naming one
        ("print(clip_grad_norm_.__name__)\n", None),  # an attribute of it
        # a record's field or a keyword: read by `asdict`, `vars`, `getattr(cfg, f.name)`
        ("class A:\n    clip: object = clip_grad_norm_\n", None),
        ("class C:\n    f: object = None\n\nx.f = clip_grad_norm_\n", None),
        ("x.f = clip_grad_norm_\nns = SimpleNamespace(f=None)\n", None),
    ],
)
def test_the_names_the_clip_is_stored_under(source: str, stored: set[str] | None) -> None:
    assert names(source) == (None if stored is None else TORCH_CLIP_NAMES | stored)


def test_a_call_is_the_clip_only_when_spelled_with_a_name() -> None:
    clips = TORCH_CLIP_NAMES | {"clip_func"}

    def call(code: str) -> ast.Call:
        node = ast.parse(code, mode="eval").body
        assert isinstance(node, ast.Call)
        return node

    assert clip_values.spelled(call("self.clip_func(p)"), clips)
    assert clip_values.spelled(call("clip_grad_norm_(p)"), clips)
    assert not clip_values.spelled(call("self.settings.update(p)"), clips)
    assert not clip_values.spelled(call("fns[0](p)"), clips)


def test_a_statements_calls_are_read_once() -> None:
    """order.calls_of keeps its answer by statement (a helper's body is read at every call of
    it): the same list, in run order, inner calls first."""
    statement = ast.parse("y = f(g(x), h.k(1))\n").body[0]

    first = order.calls_of(statement)

    assert [ast.unparse(c) for c in first] == ["g(x)", "h.k(1)", "f(g(x), h.k(1))"]
    assert order.calls_of(statement) is first
