"""ACF005's search is run only where some call of the project may be a clip
(analysis/manual_clips.py): a call written `<x>.clip_gradients(<arguments>)`, a call whose
callee is written with a torch clip's name and is torch's clip by value, or a clip's name handed
on as a value. A project that manually optimizes and calls only its own helper named like a
torch clip (NeMo's `clip_grad_value_`) reads no function; the output is the same as with the
search run, every way of clipping keeps the search and its finding, and an edit that makes the
first clip runs it again."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import PYPROJECT, edit_line, same_as_cold, write

from amp_clipfix.analysis.manual_clips import clip_calls, writes_clip_name
from amp_clipfix.cli import main
from amp_clipfix.rules import acf005

MODEL = """\
import lightning as L
import torch
{imports}


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        loss = self.layer(batch).sum()
        self.manual_backward(loss)
        {clip}
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

# NeMo's tts helper: named like torch's clip, its own code.
OWN_HELPER = """\
def clip_grad_value_(parameters, clip_value, norm_type=2):
    total = 0
    for p in parameters:
        total += p.grad.data.norm(norm_type).item()
    return total
"""

TORCH_HELPER = """\
import torch

CLIP = torch.nn.utils.clip_grad_norm_


def clip(module):
    torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
"""


def project(root: Path, imports: str, clip: str, helpers: str = OWN_HELPER) -> Path:
    write(root, "model.py", MODEL.format(imports=imports, clip=clip))
    write(root, "helpers.py", helpers)
    return root


def check(root: Path, monkeypatch: pytest.MonkeyPatch, gate: bool) -> tuple[int, str, int]:
    """`check` over the project: its exit code, what it prints, and how many functions ACF005's
    search read (calls of `order.events` from the rule); without `gate`, the gate says yes."""
    read: list[object] = []
    events = acf005.events

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(args[2])
        return events(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(acf005, "events", counted)
        if not gate:
            patched.setattr(acf005, "any_manual_clip", lambda *_: True)
        patched.chdir(root)
        arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
        result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, len(read)


@pytest.mark.parametrize(
    ("imports", "clip"),
    [
        ("from helpers import clip_grad_value_", "clip_grad_value_(self.parameters(), None)"),
        ("import helpers", "helpers.clip_grad_value_(self.parameters(), 1.0)"),
        ("", "# torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0) one day"),
    ],
    ids=["own-helper", "own-helper-attribute", "comment"],
)
def test_no_clip_by_value_no_search_and_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: str, clip: str
) -> None:
    root = project(tmp_path, imports, clip)

    code, output, read = check(root, monkeypatch, gate=True)
    ungated = check(root, monkeypatch, gate=False)

    assert read == 0
    assert ungated[2] > 0  # the search ran, and found what the gate said: nothing
    assert (code, output) == ungated[:2]
    assert "ACF005" not in output


P = "self.parameters()"
TORCH_VALUE = "from torch.nn.utils import clip_grad_value_"
CLIPPING = {
    "torch-attribute": ("", f"torch.nn.utils.clip_grad_norm_({P}, 1.0)", OWN_HELPER),
    "torch-import": (TORCH_VALUE, f"clip_grad_value_({P}, 1.0)", OWN_HELPER),
    "renamed-import": (
        "from torch.nn.utils import clip_grad_norm_ as clip",
        f"clip({P}, 1.0)",
        OWN_HELPER,
    ),
    "handed-to-a-name": (
        "",
        f"f = torch.nn.utils.clip_grad_norm_\n        f({P}, 1.0)",
        OWN_HELPER,
    ),
    "partial": (
        "import functools",
        f"functools.partial(torch.nn.utils.clip_grad_norm_, max_norm=1.0)({P})",
        OWN_HELPER,
    ),
    "getattr-string": ("", f'getattr(torch.nn.utils, "clip_grad_norm_")({P}, 1.0)', OWN_HELPER),
    "module-clip": ("", "self.clip_gradients(opt, gradient_clip_val=1.0)", OWN_HELPER),
    "module-clip-handed-on": (
        "",
        "clip = self.clip_gradients\n        clip(opt, gradient_clip_val=1.0)",
        OWN_HELPER,
    ),
    "helper-module": ("import helpers", "helpers.clip(self)", TORCH_HELPER),
    "helper-module-global": ("import helpers", f"helpers.CLIP({P}, 1.0)", TORCH_HELPER),
    "re-exported": (
        "from helpers import clip_grad_value_",
        f"clip_grad_value_({P}, 1.0)",
        f"{TORCH_VALUE}\n",
    ),
}


@pytest.mark.parametrize(
    ("imports", "clip", "helpers"), list(CLIPPING.values()), ids=list(CLIPPING)
)
def test_every_way_of_clipping_keeps_the_search_and_its_finding(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    imports: str,
    clip: str,
    helpers: str,
) -> None:
    root = project(tmp_path, imports, clip, helpers)

    code, output, read = check(root, monkeypatch, gate=True)
    ungated = check(root, monkeypatch, gate=False)

    assert read > 0
    assert (code, output) == ungated[:2]
    if "helper-module" in request.node.name and "global" not in request.node.name:
        # a function given the module, in a module no search word names: entered (order.py
        # `anywhere`), the clip reported where it is written, without a fix
        assert re.search(r"^helpers\.py:7:5: ACF005 ", output, re.MULTILINE) and code == 1
        assert "no fix: the clip cannot be moved as it is" in output
    else:
        assert re.search(r"^model\.py:1[78]:9: ACF005 ", output, re.MULTILINE) and code == 1


@pytest.mark.parametrize(
    ("source", "calls"),
    [
        ("torch.nn.utils.clip_grad_norm_(p, 1.0)\n", 1),
        ("from torch.nn.utils import clip_grad_norm_\nclip_grad_norm_(p, 1.0)\n", 1),
        ("from helpers import clip_grad_value_\nclip_grad_value_(p, None)\n", 1),
        ("def clip_gradients(self, optimizer): pass\n", 0),  # an override, not called
        ("self.clip_gradients(optimizer=opt)\n", 0),  # the classifier needs an argument
        ("# clip_grad_norm_(p, 1.0)\n", 0),
        ("self.clip_gradients(opt, 1.0)\n", None),
        ("clip = torch.nn.utils.clip_grad_norm_\n", None),
        ("f(torch.nn.utils.clip_grad_norm_)\n", None),
        ("from torch.nn.utils import clip_grad_norm_ as c\n", None),
        ("import torch.nn.utils.clip_grad_norm_ as c\n", None),
        ("getattr(torch.nn.utils, 'clip_grad_value_')\n", None),
        ("f = self.clip_gradients\n", None),
        ("self.clip_grad_norm_ = x\n", None),
    ],
)
def test_what_a_module_writes(source: str, calls: int | None) -> None:
    found = clip_calls(ast.parse(source))
    assert (None if found is None else len(found)) == calls


@pytest.mark.parametrize(
    ("source", "writes"),
    [
        ("x.clip_gradients(opt)\n", True),
        ("clip_grad_norm_(p)\n", True),
        ("ｃlip_grad_value_(p)\n", True),  # NFKC: Python reads `clip_grad_value_`
        ("clip_grad_norm(p)\n", False),
        ("clip_gradient(p)\n", False),
    ],
)
def test_what_writes_a_clip_name(source: str, writes: bool) -> None:
    assert writes_clip_name(Path("m.py"), source.encode()) is writes


def cached_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(
        tmp_path / "project",
        "from helpers import clip_grad_value_",
        "clip_grad_value_(self.parameters(), 1.0)",
    )
    write(root, "pyproject.toml", PYPROJECT.format(pin=">=2.0"))
    return root


def test_an_edit_that_makes_the_first_clip_runs_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate is part of ACF005's query: a warm run after an edit prints a cold run's bytes,
    whether the edit makes the call torch's clip (in the module, or in the helper module it
    imports from) or makes it the project's own again."""
    root = cached_project(tmp_path, monkeypatch)
    first = same_as_cold(root)
    assert b"ACF005" not in first
    own = "from helpers import clip_grad_value_"
    torch_clip = "from torch.nn.utils import clip_grad_value_"
    edit_line("model.py", own, torch_clip)(root)
    assert b"model.py:17:9: ACF005" in same_as_cold(root)
    edit_line("model.py", torch_clip, own)(root)
    assert same_as_cold(root) == first
    edit_line("helpers.py", "def clip_grad_value_(", f"{torch_clip}\n\n\ndef unused(")(root)
    assert b"model.py:17:9: ACF005" in same_as_cold(root)
