"""An edit to a module a rule reads (issue 35's after-edit case, session 26): the warm run
shows the change a cold run shows, for ACF005 (a clip helper's module) and ACF011 (a Trainer's
settings spread from another module); and ACF005's gate reads no module that writes a clip's
name only inside a longer identifier (`clip_grad_norm_fp32`, analysis/manual_clips.py), so an
edit to such a module leaves ACF005's answer reused."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_incremental import PYPROJECT, computed, edit_line, reused, same_as_cold, spied_queries
from test_manual_clips import project

from amp_clipfix.analysis.manual_clips import clip_calls, writes_clip_name

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

# A helper of the project's own, named after torch's clip (NeMo's, Megatron's).
FP32_HELPER = """\
import torch


def clip_grad_norm_fp32(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    return torch.stack([g.norm() for g in grads]).norm()
"""

SETTINGS = """\
TRAINER = dict(max_epochs=1, precision=16)
"""

TRAIN = """\
import lightning as L

from settings import TRAINER

quick = L.Trainer(precision="16", fast_dev_run=True)
trainer = L.Trainer(**TRAINER)
"""


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    yield tmp_path / "project"


def helper_project(root: Path) -> Path:
    project(
        root,
        "from helpers import clip_grad_norm_fp32",
        "clip_grad_norm_fp32(self.parameters(), 1.0)",
        FP32_HELPER,
    )
    (root / "pyproject.toml").write_text(PYPROJECT.format(pin=">=2.0"), encoding="utf-8")
    return root


def test_an_edit_to_a_module_writing_a_clip_name_only_inside_a_longer_name_reuses_acf005(
    cached: Path, asked: list[tuple[str, bool]]
) -> None:
    """helpers.py and model.py write `clip_grad_norm_fp32`, no clip's name: ACF005's gate
    parses neither, so a line added to helpers.py leaves its answer standing (on 60f2b40 the
    gate parsed both, and the edit computed ACF005 again)."""
    root = helper_project(cached)
    first = same_as_cold(root)
    assert b"ACF005" not in first
    asked.clear()
    definition = "def clip_grad_norm_fp32("
    edit_line("helpers.py", definition, f"_edited = 1\n\n\n{definition}")(root)
    assert same_as_cold(root) == first
    assert "rule ACF005" in reused(asked), asked
    assert "rule ACF005" not in computed(asked), asked


def test_an_edit_that_calls_torchs_clip_in_the_helper_module_shows_acf005(
    cached: Path, asked: list[tuple[str, bool]]
) -> None:
    """The helper's name made torch's clip (an import in model.py, then a binding in the module
    ACF005's gate did not read): the warm run computes ACF005 again and reports the clip, as a
    cold run does; undone, the finding goes."""
    root = helper_project(cached)
    first = same_as_cold(root)
    own = "from helpers import clip_grad_norm_fp32"
    torch_clip = "from torch.nn.utils import clip_grad_norm_ as clip_grad_norm_fp32"
    edit_line("model.py", own, torch_clip)(root)
    assert b"model.py:17:9: ACF005" in same_as_cold(root)
    edit_line("model.py", torch_clip, own)(root)
    assert same_as_cold(root) == first
    asked.clear()
    by_value = "clip_grad_norm_fp32 = torch.nn.utils.clip_grad_norm_\n\n\ndef unused("
    edit_line("helpers.py", "def clip_grad_norm_fp32(", by_value)(root)
    assert b"model.py:17:9: ACF005" in same_as_cold(root)
    assert "rule ACF005" in computed(asked), asked


def test_an_edit_to_the_module_holding_a_spread_settings_dict_changes_acf011(
    cached: Path,
) -> None:
    """ACF011 reads settings.py (the `**TRAINER` spread's dict): its precision rewritten there,
    and back, and the dict made elsewhere, each warm run prints a cold run's bytes."""
    root = cached
    root.mkdir(parents=True)
    (root / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT.format(pin=">=2.0"), encoding="utf-8")
    first = same_as_cold(root)
    assert b"settings.py:1:30: ACF011" in first
    edit_line("settings.py", "precision=16", 'precision="16-mixed"')(root)
    assert b"settings.py" not in same_as_cold(root)
    edit_line("settings.py", 'precision="16-mixed"', "precision=16")(root)
    assert same_as_cold(root) == first
    edit_line("settings.py", "TRAINER = dict(", "_edited = 1\nTRAINER = dict(")(root)
    assert b"settings.py:2:30: ACF011" in same_as_cold(root)
    edit_line("settings.py", "precision=16", 'precision="bf16"')(root)
    assert b"settings.py:2:30: ACF011" in same_as_cold(root)


# Writings of each clip name in code: what `clip_calls` reads (a call, an attribute, an import,
# a string, an alias) and what it does not (a longer identifier, a comment).
NAMES = ("clip_grad_norm_", "clip_grad_value_", "clip_gradients")
FORMS = (
    "{n}(p, 1.0)",
    "x.{n}(p)",
    "f = torch.nn.utils.{n}",
    "from torch.nn.utils import {n}",
    "from torch.nn.utils import {n} as c",
    "g = getattr(u, '{n}')",
    "{n}_fp32(p, 1.0)",
    "my_{n}(p)",
    "x.{n}2(p)",
    "# {n}(p)",
    "s = 'see {n}'",
    "self.{n} = 1",
)


@pytest.mark.parametrize(
    ("name", "form"), list(itertools.product(NAMES, FORMS)), ids=lambda value: str(value)
)
def test_the_gate_passes_every_text_whose_tree_clip_calls_reads(name: str, form: str) -> None:
    """Where `clip_calls` finds a call of a clip's name or a writing it cannot follow (None),
    the text test passes: the gate leaves out only modules that give the classifier nothing."""
    source = "import torch\n" + form.format(n=name) + "\n"
    found = clip_calls(ast.parse(source))
    if found is None or found:
        assert writes_clip_name(Path("m.py"), source.encode())


@pytest.mark.parametrize(
    ("source", "writes"),
    [
        ("clip_grad_norm_fp32(p)\n", False),
        ("my_clip_grad_value_(p)\n", False),
        ("x.clip_gradients_of(p)\n", False),
        ("clip_grad_norm_(p)  # and clip_grad_norm_fp32\n", True),
        ("getattr(u, 'clip_grad_value_')\n", True),
        ("ｃlip_grad_value_(p)\n", True),  # NFKC: Python reads `clip_grad_value_`
    ],
)
def test_a_clip_name_is_written_as_a_whole_word(source: str, writes: bool) -> None:
    assert writes_clip_name(Path("m.py"), source.encode()) is writes
