"""Where a GradScaler call passes `enabled` positionally (rules/acf004.py `scaler_enabled`):
the position is the library class's, from the library model (names.py, per qualified name).
torch 2.13: `torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor,
growth_interval, enabled)` and `ShardedGradScaler(device, init_scale, backoff_factor,
growth_factor, growth_interval, enabled, process_group)` take it sixth (index 5),
`torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval,
enabled)` and `torch.cpu.amp.GradScaler(...)` fifth (index 4). On 3bd52d3d every spelling was
read at index 4: a `torch.amp` call passing five or six positional arguments read
`growth_interval` as `enabled` (a review finding where the scaler is known enabled, a finding
where it is known disabled)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import amp_clipfix, write

from amp_clipfix.analysis import names

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

SHARDED = "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler"

# (imports, the scaler's construction, found: None none, "certain" or "review")
CASES = {
    "amp, six positional, disabled": (
        "",
        'torch.amp.GradScaler("cuda", 65536.0, 2.0, 0.5, 2000, False)',
        None,
    ),
    "amp, six positional, enabled": (
        "",
        'torch.amp.GradScaler("cuda", 65536.0, 2.0, 0.5, 2000, True)',
        "certain",
    ),
    "amp, five positional": ("", 'torch.amp.GradScaler("cuda", 1024.0, 2.0, 0.5, 100)', "certain"),
    "amp, six positional, run time": (
        "",
        'torch.amp.GradScaler("cuda", 65536.0, 2.0, 0.5, 2000, batches is not None)',
        "review",
    ),
    "torch.GradScaler, disabled": (
        "",
        'torch.GradScaler("cuda", 65536.0, 2.0, 0.5, 2000, False)',
        None,
    ),
    "cuda, five positional, disabled": (
        "",
        "torch.cuda.amp.GradScaler(65536.0, 2.0, 0.5, 2000, False)",
        None,
    ),
    "cuda, five positional, enabled": (
        "",
        "torch.cuda.amp.GradScaler(65536.0, 2.0, 0.5, 2000, True)",
        "certain",
    ),
    "cpu, five positional, disabled": (
        "",
        "torch.cpu.amp.GradScaler(65536.0, 2.0, 0.5, 2000, False)",
        None,
    ),
    "sharded, six positional, disabled": (
        SHARDED,
        'ShardedGradScaler("cuda", 65536.0, 0.5, 2.0, 2000, False)',
        None,
    ),
    "sharded, seven positional, enabled": (
        SHARDED,
        'ShardedGradScaler("cuda", 65536.0, 0.5, 2.0, 2000, True, None)',
        "certain",
    ),
    "amp, by keyword, disabled": ("", 'torch.amp.GradScaler("cuda", enabled=False)', None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_enabled_is_read_at_the_classs_own_position(tmp_path: Path, case: str) -> None:
    imports, scaler, found = CASES[case]
    write(tmp_path, "train.py", LOOP.format(imports=imports, scaler=scaler))
    output = amp_clipfix(tmp_path, "check", "--no-cache", entry=False).stdout.decode()
    if found is None:
        assert "ACF004" not in output, output  # (ACF012 reports the device-bound classes)
        return
    assert "train.py:9:9: ACF004" in output
    assert ("review: whether the GradScaler is enabled" in output) is (found == "review")


def test_every_library_scaler_says_where_it_takes_enabled() -> None:
    """The library model's entries, as torch 2.13's signatures have them."""
    positions = {
        qname: (entry.enabled.name, entry.enabled.position)
        for qname, entry in names.LIBRARY.items()
        if entry.kind is names.Kind.GRAD_SCALER and entry.enabled is not None
    }
    assert set(positions) == names.GRAD_SCALERS
    assert positions["torch.amp.GradScaler"] == ("enabled", 5)
    assert positions["torch.GradScaler"] == ("enabled", 5)
    assert positions["torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"] == (
        "enabled",
        5,
    )
    assert positions["torch.cuda.amp.GradScaler"] == ("enabled", 4)
    assert positions["torch.cpu.amp.grad_scaler.GradScaler"] == ("enabled", 4)
