"""The codemods used on their own, as `python -m libcst.tool codemod` would run them."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.codemod import CodemodContext

from amp_clipfix.fixes.codemods.commands import (
    Bf16Command,
    GuardCommand,
    UnfuseCommand,
    UnscaleCommand,
)
from amp_clipfix.fixes.codemods.unscale import hook_has_optimizer_idx
from amp_clipfix.project.version import Target, parse_version

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


TRAINER_SCRIPT = textwrap.dedent(
    """\
    import lightning as L
    import torch


    class Model(L.LightningModule):
        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), fused=True)


    trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
    """
)


def test_unscale_alone_routes_the_fabric_clip_through_one_helper() -> None:
    once = run(UnscaleCommand, FABRIC_SCRIPT)
    assert once.count("def clip_gradients_unscaled(") == 1
    assert "\nclip_gradients_unscaled(fabric, model, opt, max_norm=1.0)\n" in once
    assert "fabric.clip_gradients(model" not in once.split("def clip_gradients_unscaled(")[0]
    assert "fused=True" in once and '"16-mixed"' in once  # nothing else changes
    assert run(UnscaleCommand, once) == once


def test_unscale_alone_gives_the_module_class_an_override_once() -> None:
    once = run(UnscaleCommand, TRAINER_SCRIPT)
    assert once.count("def configure_gradient_clipping(") == 1
    assert once.count("def clip_module_gradients_unscaled(") == 1
    assert "        self,\n        optimizer,\n        gradient_clip_val=None,\n" in once
    assert run(UnscaleCommand, once) == once


def test_unscale_override_has_optimizer_idx_for_lightning_1() -> None:
    lightning_1 = Target.exact(parse_version("1.9.5"), "test", "pytorch-lightning")
    lightning_2 = Target.exact(parse_version("2.0.0"), "test")
    assert hook_has_optimizer_idx(lightning_1) and not hook_has_optimizer_idx(lightning_2)
    context = CodemodContext(filename="train.py")
    command = UnscaleCommand(context, target=lightning_1)
    fixed = command.transform_module(cst.parse_module(TRAINER_SCRIPT)).code
    assert "        optimizer,\n        optimizer_idx,\n        gradient_clip_val=None,\n" in fixed
    assert "hook(optimizer, optimizer_idx, value, algorithm)\n" in fixed


def test_unscale_edits_an_existing_override_instead_of_shadowing_it() -> None:
    code = TRAINER_SCRIPT.replace(
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n",
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n\n"
        "    def configure_gradient_clipping(self, optimizer, gradient_clip_val, algorithm):\n"
        "        self.clip_gradients(optimizer, 0.5, algorithm)\n",
    )
    assert "self.clip_gradients(optimizer, 0.5" in code
    fixed = run(UnscaleCommand, code)
    assert fixed.count("def configure_gradient_clipping(") == 1
    assert "clip_module_gradients_unscaled(self, optimizer, 0.5, algorithm)" in fixed
    assert "self.clip_gradients(" not in fixed.split("class Model")[1]


def test_unscale_and_unfuse_of_one_optimizer_in_one_walk_make_a_working_module() -> None:
    """Two findings on one module class may ask for different fixes of the same optimizer (one
    `unscale`, one `unfuse`): in the pipeline's one walk both apply, the override and helper
    once and the literal turned off; redundant (the override hands an unfused optimizer to
    Lightning), never a crash or a conflicting patch. ACF002 avoids it (`rules/acf002.shared`),
    but the codemods must not depend on that."""
    from amp_clipfix.fixes.codemods.base import standalone_targets
    from amp_clipfix.fixes.codemods.unfuse import UnfuseFix
    from amp_clipfix.fixes.codemods.unscale import UnscaleFix
    from amp_clipfix.fixes.transform import CombinedFixes, part
    from amp_clipfix.models import Strategy
    from amp_clipfix.project.version import DEFAULT_TARGET

    context = CodemodContext(filename="train.py")
    module = cst.parse_module(TRAINER_SCRIPT)
    positions = standalone_targets(module, context, Strategy.UNSCALE)
    assert positions == standalone_targets(module, context, Strategy.UNFUSE)  # the one literal
    parts = [part(context, fix, positions, DEFAULT_TARGET) for fix in (UnfuseFix, UnscaleFix)]
    fixed = CombinedFixes(parts).transform(module).code
    assert fixed.count("def configure_gradient_clipping(") == 1
    assert fixed.count("def clip_module_gradients_unscaled(") == 1
    assert "self.parameters(), fused=False)" in fixed and "parameters(), fused=True" not in fixed
    compile(fixed, "train.py", "exec")
    assert run(UnscaleCommand, fixed) == fixed  # nothing left to fix
