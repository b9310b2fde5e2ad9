"""A name spelled like torch's clip, read as a value, hands torch's clip on only where it may
hold torch's clip (analysis/clip_values.py): apex defines its own `clip_grad_norm_` and its
tests pass it to `assertRaises`, which turned ACF004's call gate off for the whole project
(every call asked whether it is torch's clip, every helper entered: reach.CallReach). A read
whose every value is a project function keeps the gate on; one that may hold torch's clip
(imported from torch, re-exported by a project module, either of two imports, a parameter)
turns it off as before. Each project reports what the search reports with every read taken to
hand the clip on (the gate off, as on 3bd52d3d)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import edit_line, same_as_cold

from amp_clipfix.analysis import reach
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES
from amp_clipfix.cli import main

OWN_CLIP = """\
def clip_grad_norm_(parameters, max_norm):
    return sum(1 for _ in parameters) * max_norm


def apply(fn, parameters):
    return fn(parameters, 1.0)
"""

# the project's function clips with torch's: handed on, a call of it clips
CLIPPING = """\
import torch


def clip_grad_norm_(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm)


def apply(fn, parameters):
    return fn(parameters, 1.0)
"""

REEXPORT = """\
from torch.nn.utils import clip_grad_norm_


def apply(fn, parameters):
    return fn(parameters, 1.0)
"""

CHECKS = """\
{imports}


def expect_raises(error, fn, *arguments):
    try:
        fn(*arguments)
    except error:
        return
    raise AssertionError(fn)


def test_clip():
    expect_raises(TypeError, clip_grad_norm_, None, 1.0)
"""

TRAIN = """\
import torch

from helpers import apply{more}


def train(model, optimizer, batches):
    scaler = torch.amp.GradScaler("cuda")
    for batch in batches:
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        {clip}
        scaler.step(optimizer)
        scaler.update()
"""

TORCH_CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
HANDED = "apply(clip_grad_norm_, model.parameters())"


def write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, "utf-8")
    return root


def files(helpers: str, imports: str, clip: str = TORCH_CLIP, more: str = "") -> dict[str, str]:
    return {
        "helpers.py": helpers,
        "test_helpers.py": CHECKS.format(imports=imports),
        "train.py": TRAIN.format(clip=clip, more=more),
    }


def check(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, set[object]]:
    """`check` over the project: exit code, output, and the names the clip may be called by
    (None: any call may be it: the gate off), as each question of the run had them."""
    stored: set[object] = set()
    clip_escapes = reach.CallReach.clip_escapes

    def noted(self: reach.CallReach) -> bool:
        escapes = clip_escapes(self)
        stored.add(self.stored)
        return escapes

    monkeypatch.setattr(reach.CallReach, "clip_escapes", noted)
    monkeypatch.chdir(root)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, stored


def gated_and_forced(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[int, str, set[object]], tuple[int, str, set[object]]]:
    """`check` as it is, then with every read taken to hand torch's clip on."""
    gated = check(root, monkeypatch)
    monkeypatch.undo()
    forced_off = lambda *a: lambda path, node: False  # noqa: E731
    monkeypatch.setattr(reach, "project_functions", forced_off, raising=False)
    forced = check(root, monkeypatch)
    monkeypatch.undo()
    return gated, forced


OWN_IMPORT = "from helpers import clip_grad_norm_"


def test_the_projects_own_clip_read_as_a_value_keeps_the_gate_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """apex's shape: the finding in the loop, the gate on (it was off on 3bd52d3d)."""
    root = write(tmp_path, files(OWN_CLIP, OWN_IMPORT))
    gated, forced = gated_and_forced(root, monkeypatch)
    assert gated[2] == {TORCH_CLIP_NAMES}
    assert forced[2] == {None}
    assert gated[:2] == forced[:2]
    assert gated[0] == 1 and "train.py:11:9: ACF004" in gated[1]


NEAR_MISSES = {
    "torch's own": "from torch.nn.utils import clip_grad_norm_",
    "either import": (
        "try:\n    from helpers import clip_grad_norm_\n"
        "except ImportError:\n    from torch.nn.utils import clip_grad_norm_"
    ),
    "re-exported": OWN_IMPORT,  # helpers.py re-exports torch's (REEXPORT)
    "a parameter": "def run(clip_grad_norm_):\n    expect_raises(TypeError, clip_grad_norm_)",
    "an attribute of torch": "import torch\n\nclip_grad_norm_ = None\n\n"
    "def other():\n    expect_raises(TypeError, torch.nn.utils.clip_grad_norm_)",
}


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_a_read_that_may_hold_torchs_clip_turns_the_gate_off(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helpers = REEXPORT if case == "re-exported" else OWN_CLIP
    root = write(tmp_path, files(helpers, NEAR_MISSES[case]))
    gated, forced = gated_and_forced(root, monkeypatch)
    assert gated[2] == {None}
    assert gated[:2] == forced[:2]
    assert gated[0] == 1 and "train.py:11:9: ACF004" in gated[1]


@pytest.mark.parametrize(
    ("helpers", "found"), [(CLIPPING, True), (REEXPORT, True), (OWN_CLIP, False)]
)
def test_a_clip_handed_to_a_helper_in_the_loop(
    helpers: str, found: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop hands `clip_grad_norm_` to a helper that calls it: found where it is torch's
    clip or the project's function that calls it (the gate on: the clip index follows a
    project function that clips as a value), not where the project's function clips nothing."""
    project = files(helpers, OWN_IMPORT, clip=HANDED, more=", clip_grad_norm_")
    root = write(tmp_path, project)
    gated, forced = gated_and_forced(root, monkeypatch)
    assert gated[:2] == forced[:2]
    assert ("helpers.py:5:12: ACF004" in gated[1]) is found  # the clip's line, in `apply`
    assert gated[2] == {None if helpers is REEXPORT else TORCH_CLIP_NAMES}


def test_an_edit_that_makes_the_read_torchs_clip_is_seen_by_a_warm_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only helpers.py changes (the reading file and the loop do not): its function becomes
    torch's clip re-exported, then the project's again; each warm run gives a cold run's bytes,
    the finding appearing and going."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    project = files(OWN_CLIP, OWN_IMPORT, clip=HANDED, more=", clip_grad_norm_")
    root = write(tmp_path / "project", project)
    own = OWN_CLIP.split("\n\n\n")[0] + "\n"
    torch = "from torch.nn.utils import clip_grad_norm_\n"
    first = same_as_cold(root)
    assert b"ACF004" not in first
    edit_line("helpers.py", own, torch)(root)
    assert b"helpers.py:5:12: ACF004" in same_as_cold(root)
    edit_line("helpers.py", torch, own)(root)
    assert same_as_cold(root) == first
