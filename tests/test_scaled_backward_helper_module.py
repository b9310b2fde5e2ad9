"""A scaled backward run by a helper of a module that holds none of ACF004's words (`steps.py`'s
`backward_of(scaler, loss)`, called by the training loop that clips and steps): the rule's
readings enter the helpers of a module whose text may write `<x>.scale(...).backward(...)`
(analysis/scaler_backwards.py `scaled_backward_modules`, order.events `outside`), so the
backward is met before the clip and the clip is reported, with `scaler.unscale_(optimizer)`
inserted before it in the loop (fixtures/runtime/silent_torch_clip_scaled_backward_helper
proves that fix on a real fp16 run). On 392f2541 no helper of such a module was entered: no
finding.

Each case runs `check` (or `apply`) on a project and asserts what it prints or writes; a warm
run after an edit of the helper's module gives a cold run's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import amp_clipfix, same_as_cold, write

STEPS = "def backward_of(scaler, loss):\n    scaler.scale(loss).backward()\n"
LOOP = """\
import torch
{imports}

def train(model, optimizer, batches):
    scaler = torch.amp.GradScaler("cuda")
    for batch in batches:
        loss = model(batch).sum()
        {backward}
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""
# how the loop reaches the helper: its import, its call
WAYS = {
    "its name": ("from steps import backward_of\n", "backward_of(scaler, loss)"),
    "its module": ("import steps\n", "steps.backward_of(scaler, loss)"),
    "an alias": ("from steps import backward_of as scaled\n", "scaled(scaler, loss)"),
    "a package's module": ("from amp import steps\n", "steps.backward_of(scaler, loss)"),
}
CLIP = "train.py:10:9: ACF004"


def project(root: Path, way: str, steps: str = STEPS) -> Path:
    imports, backward = WAYS[way]
    module = "amp/steps.py" if way == "a package's module" else "steps.py"
    write(root, module, steps)
    if module.startswith("amp/"):
        write(root, "amp/__init__.py", "")
    write(root, "train.py", LOOP.format(imports=imports, backward=backward))
    return root


def check(root: Path) -> str:
    return amp_clipfix(root, "check", "--no-cache", entry=False).stdout.decode()


@pytest.mark.parametrize("way", sorted(WAYS))
def test_a_helpers_scaled_backward_in_a_module_without_the_words_is_met(
    tmp_path: Path, way: str
) -> None:
    output = check(project(tmp_path, way))
    assert CLIP in output
    assert "steps.py:2 `scaler.scale(loss).backward()`" in output
    assert "fix (unscale): safe" in output


def test_the_fix_unscales_in_the_loop_before_the_clip(tmp_path: Path) -> None:
    root = project(tmp_path, "its name")
    result = amp_clipfix(root, "apply", "--yes", "--no-cache", entry=False)
    assert result.code == 0
    loop = (root / "train.py").read_text()
    assert "        scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_" in loop
    assert (root / "steps.py").read_text() == STEPS  # the helper is not touched
    assert "ACF004" not in check(root)


@pytest.mark.parametrize(
    "steps",
    [
        # the helper unscales after its backward: the clip sees unscaled gradients
        STEPS.replace("(scaler, loss)", "(scaler, loss, optimizer)")
        + "    scaler.unscale_(optimizer)\n",
        # no scaler: a plain backward
        "def backward_of(scaler, loss):\n    loss.backward()\n",
        # the project's own scaler, made in the helper's module
        "class Own:\n    def scale(self, loss):\n        return loss\n\n\n"
        "def backward_of(scaler, loss):\n    Own().scale(loss).backward()\n",
    ],
    ids=["unscaled-in-helper", "plain-backward", "own-scaler"],
)
def test_a_helper_that_leaves_no_scaled_gradients_is_quiet(tmp_path: Path, steps: str) -> None:
    root = project(tmp_path, "its name", steps)
    if "optimizer" in steps.split("\n", 1)[0]:
        train = root / "train.py"
        train.write_text(train.read_text().replace("(scaler, loss)", "(scaler, loss, optimizer)"))
    assert "ACF004" not in check(root)


def test_a_warm_run_after_the_helper_module_is_edited_is_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper's module is read through the query's recording (its text, then its tree):
    the edit that takes its scaled backward away, and the one that puts it back, are seen."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "p", "its module")
    assert CLIP.encode() in same_as_cold(root)
    steps = root / "steps.py"
    steps.write_text("def backward_of(scaler, loss):\n    loss.backward()\n")
    assert b"ACF004" not in same_as_cold(root)
    steps.write_text(STEPS)
    assert CLIP.encode() in same_as_cold(root)
