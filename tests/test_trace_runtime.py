"""`amp-clipfix trace` on real training programs (torch + Lightning on the CPU, fp16 through
`MixedPrecision("16-mixed", "cpu", GradScaler("cpu"))` or a plain torch GradScaler): each
program's hazard is found with the static rule's code from what the run did, fixed through the
observed sites (`--apply --yes`), and `--verify` runs it again and shows the proof.

The programs are fixtures/trace/<case>/; each test runs a copy in its own folder, with the
command line a user types (the tool in its own process, the program in a child)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.runtime, pytest.mark.needs("torch", "lightning")]

PROGRAMS = Path(__file__).resolve().parent.parent / "fixtures" / "trace"


def copy(case: str, tmp_path: Path) -> Path:
    folder = tmp_path / case
    shutil.copytree(PROGRAMS / case, folder)
    return folder


def trace(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`amp-clipfix trace ARGUMENTS` (the command after `--`, `python` is this interpreter)."""
    line = [sys.executable if part == "python" else part for part in arguments]
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "trace", *line],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, "NO_COLOR": "1", "AMP_CLIPFIX_NO_CACHE": "1"},
    )


def check(folder: Path) -> subprocess.CompletedProcess[str]:
    """`amp-clipfix check .`: what the static analysis finds in the program."""
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )


def verify_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("verify: ")]


def assert_fixed_and_verified(
    folder: Path, *command: str, skipped: int | None = None, changed: str = "train.py"
) -> str:
    """`--apply --yes --verify` writes a fix (in `changed`), exits 0 and the second run passes."""
    before = (folder / changed).read_bytes() if (folder / changed).exists() else b""
    fixed = trace(folder, "--apply", "--yes", "--verify", "--steps", "4", *command)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    lines = verify_lines(fixed.stderr)
    assert lines[-1].startswith("verify: passed: 4 optimizer steps"), lines
    assert not any(": WRONG" in line for line in lines)
    if skipped is not None:
        assert f", {skipped} skipped on overflow" in lines[-1]
    if before:
        assert (folder / changed).read_bytes() != before
    return fixed.stderr


def test_the_loud_fabric_error_is_found_fixed_and_verified(tmp_path: Path) -> None:
    folder = copy("fabric_fused_clip", tmp_path)
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[:5] == [
        "train.py:8:14: ACF001 Fabric clips gradients of a fused optimizer under fp16 mixed "
        "precision: Lightning raises NotImplementedError (Gradient clipping is not implemented "
        "for optimizers handling the unscaling)",
        "  fused optimizer: train.py:10 AdamW(fused=True) built here",
        "  clip: train.py:16 raised NotImplementedError",
        "  precision: train.py:8 MixedPrecision precision '16-mixed' with a GradScaler",
        "  note: observed: NotImplementedError: Gradient clipping is not implemented for "
        "optimizers handling the unscaling.",
    ]
    stderr = assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "trace: train.py:16:9: fixed through the static finding at the same site" in stderr
    assert (
        "clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)"
        in (folder / "train.py").read_text()
    )


def test_the_loud_trainer_error_is_found_as_json_fixed_and_verified(tmp_path: Path) -> None:
    folder = copy("trainer_fused_clip", tmp_path)
    found = trace(folder, "--format", "json", "--", "python", "train.py")
    assert found.returncode == 1
    [finding] = json.loads(found.stdout)["findings"]
    assert (finding["code"], finding["confidence"]) == ("ACF002", "observed")
    assert [(site["kind"], site["line"]) for site in finding["sites"]] == [
        ("fused-optimizer", 15),
        ("trainer-precision", 21),
    ]
    assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "def configure_gradient_clipping(" in (folder / "train.py").read_text()


def test_a_plain_torch_clip_of_scaled_gradients_shows_the_norm_the_step_got(
    tmp_path: Path,
) -> None:
    folder = copy("plain_torch_clip", tmp_path)
    found = trace(folder, "--record", "run.jsonl", "--", "python", "train.py")
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert lines[0].startswith("train.py:11:5: ACF004 Gradients scaled by a GradScaler")
    assert lines[2].startswith("  note: observed: clip at train.py:11 on scaled gradients: ")
    assert "trace: 1 process(es), 3 optimizer steps" in found.stderr
    events = [
        json.loads(line)["event"] for line in (folder / "run.jsonl").read_text().split("\n") if line
    ]
    assert events[:3] == ["process", "optimizer", "scaler"] and events[-1] == "stop"
    assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert (
        "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_"
        in (folder / "train.py").read_text()
    )


def test_overflow_forced_shows_the_fabric_crash_and_the_fix_skips_the_step(
    tmp_path: Path,
) -> None:
    folder = copy("fabric_overflow", tmp_path)
    quiet = trace(folder, "--", "python", "train.py")
    assert quiet.returncode == 1
    assert "no step overflowed in this run (`--overflow` forces one)" in quiet.stdout
    crash = trace(folder, "--overflow", "--", "python", "train.py")
    assert crash.returncode == 1
    assert crash.stdout.splitlines()[:3] == [
        "train.py:16:9: ACF007 `fabric.clip_gradients(..., max_norm=...)` under a GradScaler "
        "keeps `error_if_nonfinite=True`: an fp16 overflow step, which the scaler would skip, "
        "raises RuntimeError (the total norm is non-finite)",
        "  clip: train.py:16 raised RuntimeError",
        "  note: observed: RuntimeError: The total norm of order 2.0 for gradients from "
        "`parameters` is non-finite, so it cannot be clipped. To disable this error and scale "
        "the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
    ]
    assert_fixed_and_verified(folder, "--overflow", "--", "python", "train.py", skipped=1)


def test_plain_backward_in_manual_optimization_is_found_and_fixed(tmp_path: Path) -> None:
    folder = copy("manual_plain_backward", tmp_path)
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[:4] == [
        "train.py:16:9: ACF008 Manual optimization calls `loss.backward()` instead of "
        "`self.manual_backward(loss)`: under fp16 the loss is never scaled, and Lightning's "
        "unscale in `optimizer.step()` fails (AssertionError: Attempted unscale_ but _scale is "
        "None) or divides unscaled gradients",
        "  backward: train.py:16 plain backward in manual optimization",
        "  note: observed: loss.backward() at train.py:16 in Model, which optimizes manually "
        "under a GradScaler",
        "  note: then AssertionError: Attempted unscale_ but _scale is None.  This may indicate "
        "your script did not use scaler.scale(loss or outputs) earlier in the iteration.",
    ]
    assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "self.manual_backward(loss)" in (folder / "train.py").read_text()


def test_a_program_started_with_python_m(tmp_path: Path) -> None:
    folder = copy("module_main", tmp_path)
    found = trace(folder, "--", "python", "-m", "pkg.train")
    assert found.returncode == 1
    assert found.stdout.startswith("pkg/train.py:12:9: ACF004 ")
    assert_fixed_and_verified(folder, "--", "python", "-m", "pkg.train")
    assert "scaler.unscale_(optimizer)" in (folder / "pkg" / "train.py").read_text()


def test_an_optimizer_from_a_registry_and_a_json_config_is_fixed_in_the_config(
    tmp_path: Path,
) -> None:
    """`getattr(torch.optim, name)(params, **config[...])` with fused in a JSON file the program
    reads with json.load: the static analysis cannot tell, the run can, and names the key."""
    folder = copy("registry_optimizer", tmp_path)
    static = check(folder)
    assert "ACF001" not in static.stdout
    found = trace(folder, "--", "python", "train.py", "config.json")
    assert found.returncode == 1
    assert found.stdout.splitlines()[:4] == [
        "config.json:1:65: ACF001 Fabric clips gradients of a fused optimizer under fp16 mixed "
        "precision: Lightning raises NotImplementedError (Gradient clipping is not implemented "
        "for optimizers handling the unscaling)",
        "  fused optimizer: train.py:11 AdamW(fused=True) built here",
        "  fused optimizer: config.json:1 optimizer_args.fused: true (the config the run read)",
        "  clip: train.py:25 raised NotImplementedError",
    ]
    dry = trace(folder, "--dry-run", "--", "python", "train.py", "config.json")
    assert dry.returncode == 1
    line = '{"optimizer": "AdamW", "optimizer_args": {"lr": 0.001, "fused": %s}, "max_norm": 1.0}'
    assert f"-{line % 'true'}\n+{line % 'false'}\n" in dry.stdout
    train = (folder / "train.py").read_bytes()
    stderr = assert_fixed_and_verified(
        folder, "--", "python", "train.py", "config.json", changed="config.json"
    )
    assert (
        "trace: config.json:1:65: fixed in the config the run read: optimizer_args.fused: true "
        "becomes false" in stderr
    )
    assert (folder / "train.py").read_bytes() == train


def test_a_yaml_config_read_with_yaml_safe_load_is_fixed_in_its_key(tmp_path: Path) -> None:
    """The same registry program with its config in YAML (`fused: yes`, YAML 1.1's true, as
    PyYAML reads it): the key's token is flipped, its comment kept, the code untouched."""
    folder = copy("yaml_config", tmp_path)
    command = ("--", "python", "train.py", "config.yaml")
    found = trace(folder, *command)
    assert found.returncode == 1
    assert found.stdout.splitlines()[1:3] == [
        "  fused optimizer: train.py:11 AdamW(fused=True) built here",
        "  fused optimizer: config.yaml:5 optimizer_args.fused: yes (the config the run read)",
    ]
    train = (folder / "train.py").read_bytes()
    stderr = assert_fixed_and_verified(folder, *command, changed="config.yaml")
    assert (
        "trace: config.yaml:5:10: fixed in the config the run read: optimizer_args.fused: yes "
        "becomes no" in stderr
    )
    assert (folder / "config.yaml").read_text().splitlines()[4] == (
        "  fused: no  # the fast kernel (YAML 1.1: yes is true)"
    )
    assert (folder / "train.py").read_bytes() == train


def test_a_config_key_is_named_not_edited_when_two_keys_could_be_it(tmp_path: Path) -> None:
    """Two `fused: true` keys in the config the run read: both are named, and the fix goes where
    the run built the optimizer."""
    folder = copy("registry_optimizer", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["scheduler_args"] = {"fused": True}
    (folder / "config.json").write_text(json.dumps(config))
    found = trace(folder, "--", "python", "train.py", "config.json")
    assert found.returncode == 1
    assert found.stdout.splitlines()[1:4] == [
        "  fused optimizer: train.py:11 AdamW(fused=True) built here",
        "  fused optimizer: config.json:1 optimizer_args.fused: true (the config the run read)",
        "  fused optimizer: config.json:1 scheduler_args.fused: true (the config the run read)",
    ]
    dry = trace(folder, "--dry-run", "--", "python", "train.py", "config.json")
    assert (
        '+    return kind(params, **{**config["optimizer_args"], "fused": False})\n' in dry.stdout
    )


def test_a_clip_in_manual_optimization_before_the_step_clips_scaled_gradients(
    tmp_path: Path,
) -> None:
    folder = copy("manual_clip_scaled", tmp_path)
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert lines[0].startswith("train.py:17:9: ACF005 Manual optimization clips gradients ")
    applied = [
        float(match.group(1))
        for line in lines
        if (match := re.search(r"applied norm ([-+.e\d]+) \(meant 1\)$", line))
    ]
    assert applied and max(applied) <= 1 / 128  # max_norm / scale, the scale 1024 backed off
    assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "def on_before_optimizer_step(" in (folder / "train.py").read_text()


def test_trainer_clip_with_manual_optimization_is_found_with_the_module_class(
    tmp_path: Path,
) -> None:
    folder = copy("manual_clip_trainer_val", tmp_path)
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[:3] == [
        "train.py:6:1: ACF009 `Trainer(gradient_clip_val=...)` trains a module with manual "
        "optimization: Lightning raises MisconfigurationException (automatic gradient clipping "
        "is not supported for manual optimization)",
        "  precision: train.py:26 MixedPrecision precision '16-mixed' with a GradScaler, "
        "gradient_clip_val=0.5",
        "  manual optimization: train.py:6 class Model: automatic_optimization is False",
    ]
    assert_fixed_and_verified(folder, "--", "python", "train.py")
    text = (folder / "train.py").read_text()
    assert "        gradient_clip_val=0.5,\n" not in text  # the Trainer's argument is gone
    assert "def on_before_optimizer_step(self, optimizer):" in text


def test_a_lightning_cli_program_configured_in_yaml(tmp_path: Path) -> None:
    """`fused: true` comes from config.yaml through the module's argument: the finding names
    the file and the keys the run's values came from (the monitor saw the run open it). With
    the YAML, the static analysis knows the Trainer too and finds `fused=self.fused`: its fix
    (right for every value of the key) is the one written."""
    folder = copy("cli_yaml", tmp_path)
    command = ("--", "python", "train.py", "fit", "--config", "config.yaml")
    found = trace(folder, *command)
    assert found.returncode == 1
    assert found.stdout.splitlines()[:6] == [
        "config.yaml:3:14: ACF002 Trainer clips gradients of a fused optimizer under mixed "
        "precision: Lightning raises RuntimeError (the current optimizer does not allow for "
        "gradient clipping)",
        "  fused optimizer: train.py:19 AdamW(fused=True) built here",
        "  fused optimizer: config.yaml:11 model.fused: true (the config the run read)",
        "  precision: train.py:23 MixedPrecision precision 'bf16-mixed' without a GradScaler, "
        "gradient_clip_val=1.0",
        "  precision: config.yaml:3 trainer.precision: bf16-mixed (the config the run read)",
        "  clip: config.yaml:5 trainer.gradient_clip_val: 1.0 (the config the run read)",
    ]
    stderr = assert_fixed_and_verified(folder, *command)
    assert "trace: train.py:19:68: fixed through the static finding at the same site" in stderr
    assert "def configure_gradient_clipping(" in (folder / "train.py").read_text()
    assert (folder / "config.yaml").read_bytes() == (
        PROGRAMS / "cli_yaml" / "config.yaml"
    ).read_bytes()


def test_ddp_children_on_cpu_are_traced_and_fixed(tmp_path: Path) -> None:
    """Fabric(strategy="ddp", devices=2) starts a second process: it inherits the monitor."""
    folder = copy("fabric_ddp", tmp_path)
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert lines[0].startswith("train.py:21:9: ACF006 Fabric under fp16 clips with torch's clip")
    assert "  note: the same in 1 other process(es)" in lines
    assert "trace: 2 process(es), 6 optimizer steps" in found.stderr
    fixed = trace(folder, "--apply", "--yes", "--verify", "--", "python", "train.py")
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert verify_lines(fixed.stderr)[-1].startswith("verify: passed: 6 optimizer steps")


def test_a_clip_in_a_callback_from_a_factory_is_found_and_fixed(tmp_path: Path) -> None:
    """`callbacks=make_callbacks({...})` through a registry dict: `check` finds nothing, the run
    shows Lightning's error in the callback's clip."""
    folder = copy("callback_factory", tmp_path)
    static = check(folder)
    assert static.returncode == 0, static.stdout
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[1:3] == [
        "  fused optimizer: train.py:29 AdamW(fused=True) built here",
        "  clip: train.py:10 raised RuntimeError",
    ]
    assert found.stdout.startswith("train.py:10:9: ACF002 ")
    stderr = assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "trace: train.py:29:16: fixed at the observed site" in stderr


def test_plain_backward_in_a_decorated_training_step_is_fixed_where_it_ran(
    tmp_path: Path,
) -> None:
    """A decorator runs the manual step and calls `loss.backward()` on the module it was
    given as `module`: the static analysis reads the wrapper as the module's step (issue 37's
    decorators), the run finds it too and names the module; the fix is the static one."""
    folder = copy("decorated_step", tmp_path)
    static = check(folder)
    assert static.stdout.startswith("train.py:14:9: ACF008 "), static.stdout
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[1] == (
        "  backward: train.py:14 plain backward in manual optimization"
    )
    dry = trace(folder, "--dry-run", "--", "python", "train.py")
    assert "-        loss.backward()\n+        module.manual_backward(loss)\n" in dry.stdout
    stderr = assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "trace: train.py:14:9: fixed through the static finding at the same site" in stderr


@pytest.mark.needs("torch", "lightning", "hydra")
def test_a_hydra_instantiate_in_python_is_found_fixed_and_verified(tmp_path: Path) -> None:
    """`hydra.utils.instantiate(cfg.optimizer, params=...)` from an `OmegaConf.create({...})`
    config with `_target_: torch.optim.AdamW` and `fused: True`, under Fabric with fp16 and
    clipping: the static analysis reads the Python config (issue 37's configuration model) and
    finds ACF001 at the clip; the run finds Lightning's error where Hydra built the optimizer,
    and the fix is the static one (the unscale helper at the clip), verified on the rerun."""
    folder = copy("hydra_instantiate", tmp_path)
    static = check(folder)
    assert static.stdout.startswith("train.py:23:9: ACF001 "), static.stdout
    found = trace(folder, "--", "python", "train.py")
    assert found.returncode == 1
    assert found.stdout.splitlines()[:3] == [
        "train.py:16:14: ACF001 Fabric clips gradients of a fused optimizer under fp16 mixed "
        "precision: Lightning raises NotImplementedError (Gradient clipping is not implemented "
        "for optimizers handling the unscaling)",
        "  fused optimizer: train.py:18 AdamW(fused=True) built here",
        "  clip: train.py:23 raised NotImplementedError",
    ]
    stderr = assert_fixed_and_verified(folder, "--", "python", "train.py")
    assert "trace: train.py:23:9: fixed through the static finding at the same site" in stderr
    assert "def clip_gradients_unscaled(" in (folder / "train.py").read_text()
