"""The reach index of ACF004's search (analysis/reach.py): an attribute call whose receiver the
evaluator would follow into other code is asked about only when the project binds its name to a
value, or to a function that can reach a scaled backward, an unscale, a step or a clip. The
finding through a chain of calls across files is still found, with the same output as with every
call asked about."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import bound_names, clip_tail, clip_values, reach
from amp_clipfix.analysis import facts as facts_module
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES as CLIP_NAMES
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.cli import main

OPS = """\
import torch


def clip(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
"""

ENGINE = """\
from ops import clip


class Engine:
    def backward_and_clip(self, scaler, loss, model):
        scaler.scale(loss).backward()
        clip(model)

    def log_stats(self, loss):
        print(float(loss))
"""

TRAIN = """\
import torch

from engine import Engine


def summary(loss):
    return loss.detach()


def run(engine, model, optimizer, scaler, batches):
    for batch in batches:
        loss = model(batch).sum()
        engine.backward_and_clip(scaler, loss, model)
        engine.log_stats(loss)
        print(summary(loss).item())
        scaler.step(optimizer)
        scaler.update()


def main():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    run(Engine(), model, optimizer, scaler, [torch.randn(2)])
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text, "utf-8")


def every_statement(capable: clip_tail.ClipCapable) -> None:
    capable.built = capable.open = True


def check(
    project: Path, monkeypatch: pytest.MonkeyPatch, gate: bool = True
) -> tuple[int, str, set[str]]:
    """`check` over a project: its exit code, what it prints, and the code of every callee the
    evaluator was asked about (`gate=False`: every call is asked about, as before the index)."""
    asked: set[str] = set()
    values = facts_module.ProjectFacts.values

    def noted(self, file, node):  # type: ignore[no-untyped-def]
        asked.add(file.code(node))
        return values(self, file, node)

    monkeypatch.setattr(facts_module.ProjectFacts, "values", noted)
    # every statement may clip, callers read whole (analysis/clip_tail.py): the reach gate alone
    monkeypatch.setattr(clip_tail.ClipCapable, "build", every_statement)
    monkeypatch.setattr(clip_tail, "statement_of", lambda *arguments: None)
    if not gate:
        monkeypatch.setattr(reach.CallReach, "call_runs", lambda *a: True)
        monkeypatch.setattr(reach.CallReach, "may_hold_instance", lambda *a: True)
    monkeypatch.chdir(project)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, asked


def test_the_finding_through_a_chain_across_files_is_found_and_the_rest_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"ops.py": OPS, "engine.py": ENGINE, "train.py": TRAIN})

    code, output, asked = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "engine.py:6:9: ACF004" in output
    assert "clip: ops.py:5 `torch.nn.utils.clip_grad_norm_" in output
    assert "step: train.py:16 `scaler.step(optimizer)`" in output
    assert "engine.backward_and_clip" in asked  # its method reaches the backward and the clip
    # `log_stats` is only a function that reaches no event; `item` is bound nowhere
    assert "engine.log_stats" not in asked
    assert "summary(loss).item" not in asked


def test_without_the_gate_the_same_output_asks_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"ops.py": OPS, "engine.py": ENGINE, "train.py": TRAIN})
    gated = check(tmp_path, monkeypatch)
    monkeypatch.undo()

    code, output, asked = check(tmp_path, monkeypatch, gate=False)

    assert (code, output) == gated[:2]
    assert {"engine.log_stats", "summary(loss).item"} <= asked


def test_a_clip_handed_on_as_a_value_turns_the_gate_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clipper = partial(torch.nn.utils.clip_grad_norm_, ...)`: any call may be the clip, so
    every call is asked about, as without the index (stored whole under a name, only a call so
    spelled may be it: tests/test_clip_values.py)."""
    ops = (
        OPS + "\n\nimport functools\nclipper = functools.partial(torch.nn.utils.clip_grad_norm_)\n"
    )
    write(tmp_path, {"ops.py": ops, "engine.py": ENGINE, "train.py": TRAIN})

    code, output, asked = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert {"engine.log_stats", "summary(loss).item"} <= asked


@pytest.mark.parametrize(
    ("source", "bound"),
    [
        ("def f():\n    item = 1\n    return item\n", False),  # a local
        ("x.item = f\n", True),  # an attribute store
        ("f(item=g)\n", True),  # a keyword (a namespace's, a record's field)
        ("class A:\n    item = staticmethod(f)\n", True),  # a class body
        ("item = f\n", True),  # a module's binding
        ("setattr(x, 'item', f)\n", True),  # a string argument
        ("d = {'item': f}\n", True),  # a dict's key (`SimpleNamespace(**d)`)
        ("class A:\n    def __init__(self, item):\n        pass\n", True),  # hparams
        ("class A:\n    @property\n    def item(self):\n        return f\n", True),
        ("class A:\n    def item(self):\n        return 1\n", False),  # a function only
        ("from m import item\n", False),  # under its own name: the same object
        ("from m import other as item\n", True),
    ],
)
def test_what_gives_an_attribute_a_value(source: str, bound: bool) -> None:
    path = Path("/project/m.py")
    summary = summarise(path.parent, path, source)
    data = source.encode()
    assert bound_names.file_names(summary, data).binds_value("item", data) is bound
    assert reach.binds_attribute_value(path, data, "item") is bound


def test_a_clip_is_handed_on_only_where_written_other_than_called() -> None:
    def stored(source: str) -> set[str] | None:
        return clip_values.stored_names(ast.parse(source), CLIP_NAMES)

    called = "import torch\ntorch.nn.utils.clip_grad_norm_(p, 1.0)\n"
    imported = "from torch.nn.utils import clip_grad_norm_\nclip_grad_norm_(p, 1.0)\n"
    assert stored(called) == set()
    assert stored(imported) == set()
    assert stored("import torch\nc = torch.nn.utils.clip_grad_norm_\n") == {"c"}
    assert stored("from torch.nn.utils import clip_grad_norm_ as c\n") == {"c"}
    assert stored("import functools\nfunctools.partial(clip_grad_norm_)") is None
    assert stored("getattr(utils, 'clip_grad_value_')(p, 1)\n") is None
