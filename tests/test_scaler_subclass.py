"""A project subclass of torch's GradScaler is torch's scaler for ACF004 where it scales,
unscales and steps as torch's class does: its bases resolve (by value, any spelling, any
module, project classes between) to a library GradScaler class, and neither it nor a project
class among its bases defines a method torch's class runs for that (`scale`, `unscale_`,
`_unscale_grads_`, `step`, `_maybe_opt_step`, `__getattribute__`: names.GRAD_SCALER_METHODS).
Anything that may change those (such a method, an attribute of that name, a decorator, a
metaclass, a body the analysis does not read, a base it does not know) leaves it no scaler, as
before; so does the project's own class of that name (analysis/scaler_calls.py `scaler_base`).

Each case runs `check` on a project and asserts what it prints: the finding and whether it is
certain, or no finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import amp_clipfix, write

LOOP = """\
import torch
{imports}


def train(model, optimizer, batches):
    scaler = {scaler}
    for batch in batches:
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""


def scaler_module(body: str, base: str = "torch.amp.GradScaler", header: str = "") -> str:
    return f"import torch\n{header}\n\nclass Scaler({base}):\n{body}"


REPORT = "    def report(self):\n        return self.get_scale()\n"
TRAIN = LOOP.format(imports="from scalers import Scaler\n", scaler='Scaler("cuda")')

# torch's scaler, however the subclass reaches it: found, certain (torch's `enabled` default)
FOUND = {
    "torch.amp": {"scalers.py": scaler_module(REPORT)},
    "torch.cuda.amp, an alias": {
        "scalers.py": scaler_module(
            REPORT, "Base", "from torch.cuda.amp import GradScaler as Base\n"
        ),
    },
    "a project class between, in another module": {
        "base.py": scaler_module(REPORT).replace("class Scaler", "class Logged"),
        "scalers.py": "from base import Logged\n\n\nclass Scaler(Logged):\n    quiet = True\n",
    },
    "a project mixin beside": {
        "scalers.py": scaler_module(
            REPORT, "Mixin, torch.amp.GradScaler", "\n\nclass Mixin(object):\n    pass\n"
        ),
    },
    "the sharded scaler": {
        "scalers.py": scaler_module(
            "    pass\n",
            "ShardedGradScaler",
            "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n",
        ),
    },
}

# what may change how it scales, unscales or steps: no finding
QUIET = {
    "defines scale": scaler_module("    def scale(self, outputs):\n        return outputs\n"),
    "defines _unscale_grads_": scaler_module(
        "    def _unscale_grads_(self, *args):\n        return {}\n"
    ),
    "defines _maybe_opt_step": scaler_module(
        "    def _maybe_opt_step(self, *args, **kwargs):\n        return None\n"
    ),
    "binds step": scaler_module("    step = torch.amp.GradScaler.update\n"),
    "assigns self.step": scaler_module(
        "    def __init__(self, *args):\n        super().__init__(*args)\n"
        "        self.step = print\n"
    ),
    "defines __getattribute__": scaler_module(
        "    def __getattribute__(self, name):\n"
        "        return object.__getattribute__(self, name)\n"
    ),
    "a base between defines unscale_": (
        scaler_module("    def unscale_(self, optimizer):\n        pass\n").replace(
            "class Scaler", "class Base"
        )
        + "\n\nclass Scaler(Base):\n    pass\n"
    ),
    "a library base of another kind": scaler_module(
        "    pass\n", "torch.nn.Module, torch.amp.GradScaler"
    ),
    "a base not known": scaler_module("    pass\n", "make_base(), torch.amp.GradScaler"),
    "decorated": scaler_module("    pass\n").replace("class Scaler", "@register\nclass Scaler"),
    "a metaclass": scaler_module("    pass\n", "torch.amp.GradScaler, metaclass=Meta"),
    "a body it does not read": scaler_module(
        "    if True:\n        def step(self, optimizer):\n            pass\n"
    ),
    "no library base": (
        "class Scaler:\n    def scale(self, loss):\n        return loss\n\n"
        "    def step(self, optimizer):\n        optimizer.step()\n"
    ),
}


def check(root: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        write(root, name, text)
    result = amp_clipfix(root, "check", "--no-cache", entry=False)
    return result.stdout.decode()


@pytest.mark.parametrize("case", sorted(FOUND))
def test_a_subclass_that_scales_as_torchs_is_torchs_scaler(tmp_path: Path, case: str) -> None:
    output = check(tmp_path, {**FOUND[case], "train.py": TRAIN})
    assert "train.py:11:9: ACF004" in output
    assert "review:" not in output  # no own __init__: enabled by torch's default
    assert "fix (unscale): safe" in output


@pytest.mark.parametrize("case", sorted(QUIET))
def test_a_subclass_that_may_scale_otherwise_is_no_scaler(tmp_path: Path, case: str) -> None:
    output = check(tmp_path, {"scalers.py": QUIET[case], "train.py": TRAIN})
    assert "ACF004" not in output
    assert output.startswith("0 findings")


def test_a_subclass_with_its_own_init_is_a_review_finding(tmp_path: Path) -> None:
    """Its `__init__` takes the arguments: whether the scaler is enabled is not torch's
    `enabled` read from the call."""
    init = "    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n"
    output = check(tmp_path, {"scalers.py": scaler_module(init), "train.py": TRAIN})
    assert "train.py:11:9: ACF004" in output
    assert "review: whether the GradScaler is enabled is decided at run time" in output


@pytest.mark.parametrize(("enabled", "found"), [("False", False), ("True", True)])
def test_torchs_enabled_is_read_from_a_subclass_call(
    tmp_path: Path, enabled: str, found: bool
) -> None:
    train = LOOP.format(
        imports="from scalers import Scaler\n", scaler=f'Scaler("cuda", enabled={enabled})'
    )
    output = check(tmp_path, {"scalers.py": scaler_module(REPORT), "train.py": train})
    assert ("ACF004" in output) is found
