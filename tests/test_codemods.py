"""The codemods used on their own, as `python -m libcst.tool codemod` would run them."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.codemod import CodemodContext

from amp_clipfix.fixes.codemods.bf16 import Bf16Command
from amp_clipfix.fixes.codemods.guard import GuardCommand
from amp_clipfix.fixes.codemods.unfuse import UnfuseCommand

FABRIC_SCRIPT = textwrap.dedent(
    """\
    import torch
    from lightning.fabric import Fabric
    from lightning.fabric.plugins import MixedPrecision

    fabric = Fabric(
        plugins=MixedPrecision(
            "16-mixed",
            "cuda",
            torch.amp.GradScaler(),
        ),
    )
    opt = torch.optim.Adam(params, fused=True)
    other = torch.optim.Adam(params, fused=True) if False else None
    fabric.clip_gradients(model, opt, max_norm=1.0)
    """
)


def run(command: type, code: str) -> str:
    context = CodemodContext(filename="train.py")
    return command(context).transform_module(cst.parse_module(code)).code


def test_unfuse_alone_flips_only_the_fused_literals_it_finds() -> None:
    fixed = run(UnfuseCommand, FABRIC_SCRIPT)
    assert fixed.count("fused=False") == 2
    assert fixed.replace("fused=False", "fused=True") == FABRIC_SCRIPT


def test_bf16_alone_rewrites_the_plugin_and_drops_its_scaler() -> None:
    fixed = run(Bf16Command, FABRIC_SCRIPT)
    assert '"bf16-mixed",\n        "cuda",\n    ),\n)\n' in fixed
    assert "GradScaler" not in fixed
    assert "fused=True" in fixed


def test_guard_alone_inserts_the_helper_once_and_is_idempotent() -> None:
    once = run(GuardCommand, FABRIC_SCRIPT)
    assert once.count("def can_clip_gradients(") == 1
    assert "if can_clip_gradients(fabric, opt):\n    fabric.clip_gradients(" in once
    assert run(GuardCommand, once) == once


def test_codemods_leave_a_module_without_findings_alone() -> None:
    code = "import torch\nopt = torch.optim.AdamW(params, fused=True)\n"
    for command in (UnfuseCommand, Bf16Command, GuardCommand):
        assert run(command, code) == code


def test_guard_keeps_the_clip_result_usable_and_is_idempotent() -> None:
    code = FABRIC_SCRIPT.replace("fabric.clip_gradients(", "norm = fabric.clip_gradients(")
    once = run(GuardCommand, code)
    assert (
        "if can_clip_gradients(fabric, opt):\n"
        "    norm = fabric.clip_gradients(model, opt, max_norm=1.0)\n"
        "else:\n"
        "    norm = unclipped_gradient_norm(fabric, model, opt, max_norm=1.0)\n"
    ) in once
    assert once.count("def unclipped_gradient_norm(") == 1
    assert once.index("def can_clip_gradients(") < once.index("def unclipped_gradient_norm(")
    assert run(GuardCommand, once) == once


def test_guard_binds_none_where_the_skipped_call_returns_none() -> None:
    code = FABRIC_SCRIPT.replace(
        "fabric.clip_gradients(model, opt, max_norm=1.0)",
        "result = fabric.clip_gradients(model, opt, clip_val=0.5)",
    )
    fixed = run(GuardCommand, code)
    assert "else:\n    result = None\n" in fixed
    assert "unclipped_gradient_norm" not in fixed


def test_bf16_alone_rewrites_a_precision_constant_and_drops_the_dead_scaler() -> None:
    code = textwrap.dedent(
        """\
        import torch
        from lightning.fabric import Fabric
        from lightning.fabric.plugins import MixedPrecision

        PRECISION = "16-mixed"
        scaler = torch.amp.GradScaler()
        fabric = Fabric(plugins=MixedPrecision(PRECISION, "cuda", scaler))
        opt = torch.optim.Adam(params, fused=True)
        fabric.clip_gradients(model, opt, max_norm=1.0)
        """
    )
    fixed = run(Bf16Command, code)
    assert 'PRECISION = "bf16-mixed"\nfabric = Fabric(' in fixed
    assert 'MixedPrecision(PRECISION, "cuda")' in fixed
    assert "scaler" not in fixed
    assert run(Bf16Command, fixed) == fixed
