"""The command line as a user drives it: exit codes, streams, the patch, the prompt, errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample_project"


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled sample project, with the current folder set to its parent."""
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project)
    monkeypatch.chdir(tmp_path)
    return project


def invoke(*args: str, input: str | None = None):  # noqa: ANN201
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.py")}


def test_help_explains_the_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    assert "check" in result.output and "apply" in result.output
    assert "fused" in result.output
    apply_help = invoke("apply", "--help").output
    for option in ("--yes", "--dry-run", "--strategy", "--lightning-version", "--exclude"):
        assert option in apply_help


@pytest.mark.needs("lightning")  # the report names the Lightning installed here
def test_check_exits_1_before_and_0_after_apply(sample: Path) -> None:
    before = invoke("check", "sample_project")
    assert before.exit_code == 1
    assert "sample_project/train_fabric.py:18:9: ACF001" in before.output
    assert "sample_project/model.py:21:76: ACF002" in before.output
    assert "assumed lightning 2.6.6 from installed distribution." in before.output
    applied = invoke("apply", "--yes", "sample_project")
    assert applied.exit_code == 0, applied.output
    after = invoke("check", "sample_project")
    assert after.exit_code == 0, after.output
    assert "0 findings" in after.output


def test_apply_without_terminal_or_yes_writes_nothing(sample: Path) -> None:
    before = snapshot(sample)
    result = invoke("apply", "sample_project")
    assert result.exit_code == 1
    assert "nothing written" in result.output
    assert snapshot(sample) == before


def test_apply_with_stdin_closed_writes_nothing_and_says_so(sample: Path) -> None:
    """`apply <&-` (a job runner without stdin): Python's sys.stdin is None then."""
    before = snapshot(sample)
    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "apply", "sample_project"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=sample.parent,
        preexec_fn=lambda: os.close(0),  # noqa: PLW1509 - runs before the interpreter starts
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "nothing written" in result.stderr
    assert snapshot(sample) == before


def test_dry_run_patch_applies_with_git_to_the_same_bytes(sample: Path, tmp_path: Path) -> None:
    patch = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "apply", "--dry-run", "sample_project"],
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert patch.returncode == 1, patch.stderr
    assert patch.stdout.startswith(b"# ACF")  # what each file's patch fixes, then its header
    assert b"\n--- a/sample_project/" in patch.stdout
    assert b"Dry run" in patch.stderr and b"Dry run" not in patch.stdout
    patched = tmp_path / "patched"
    shutil.copytree(sample, patched / "sample_project")
    subprocess.run(["git", "init", "-q"], cwd=patched, check=True)
    subprocess.run(["git", "apply", "-"], input=patch.stdout, cwd=patched, check=True)
    assert invoke("apply", "--yes", "sample_project").exit_code == 0
    assert snapshot(patched / "sample_project") == snapshot(sample)


def test_dry_run_never_writes(sample: Path) -> None:
    before = snapshot(sample)
    assert invoke("apply", "--dry-run", "--yes", "sample_project").exit_code == 1
    assert snapshot(sample) == before


def test_bf16_on_the_trainer_path_is_refused_with_a_reason(sample: Path) -> None:
    trainer_file = (sample / "train_trainer.py").read_bytes()
    model_file = (sample / "model.py").read_bytes()
    result = invoke("apply", "--yes", "--strategy", "bf16", "sample_project")
    assert result.exit_code == 1
    assert "bf16 is not a fix on the Trainer path of Lightning 2.6.6" in result.output
    assert "use --strategy unscale or --strategy unfuse" in result.output
    assert (sample / "train_trainer.py").read_bytes() == trainer_file
    assert (sample / "model.py").read_bytes() == model_file
    assert b'precision="bf16-mixed"' in (sample / "train_fabric.py").read_bytes()


def test_unparsable_file_is_reported_and_the_rest_is_fixed(sample: Path) -> None:
    broken = sample / "broken.py"
    broken.write_bytes(b"opt = torch.optim.AdamW(params, fused=True\n")
    result = invoke("apply", "--yes", "sample_project")
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if is_error_line(line)]
    assert len(errors) == 1 and "broken.py" in errors[0] and "cannot parse" in errors[0]
    assert broken.read_bytes() == b"opt = torch.optim.AdamW(params, fused=True\n"
    assert b"def configure_gradient_clipping(" in (sample / "model.py").read_bytes()


def test_missing_path_is_an_error_but_other_paths_run(sample: Path) -> None:
    result = invoke("check", "does-not-exist", "sample_project")
    assert result.exit_code == 2
    assert "does-not-exist" in result.output
    assert "ACF001" in result.output


def test_bad_lightning_version_is_a_usage_error(sample: Path) -> None:
    result = invoke("check", "--lightning-version", "two", "sample_project")
    assert result.exit_code == 2
    assert "--lightning-version" in result.output


def test_newer_lightning_accepts_bf16_on_the_trainer_path(sample: Path) -> None:
    result = invoke(
        "apply", "--yes", "--strategy", "bf16", "--lightning-version", "2.7", "sample_project"
    )
    assert result.exit_code == 0, result.output
    assert b'precision="bf16-mixed"' in (sample / "train_trainer.py").read_bytes()
    assert b"fused=True" in (sample / "model.py").read_bytes()


def test_confirmation_on_a_terminal(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("amp_clipfix.cli.is_interactive", lambda: True)
    declined = invoke("apply", "sample_project", input="n\n")
    assert declined.exit_code == 1 and "Nothing written" in declined.output
    assert b"fused=True" in (sample / "model.py").read_bytes()
    accepted = invoke("apply", "sample_project", input="a\n")
    assert accepted.exit_code == 0, accepted.output
    assert b"fused=False" in (sample / "model.py").read_bytes()


def test_console_script_runs_in_a_subprocess_without_torch_or_lightning(sample: Path) -> None:
    code = (
        "import sys, runpy; sys.argv = ['amp-clipfix', 'check', 'sample_project']\n"
        "try:\n    runpy.run_module('amp_clipfix', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert not {'torch', 'lightning'} & set(sys.modules), 'imported torch/lightning'\n"
        "    raise\n"
    )
    env = {**os.environ, "NO_COLOR": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=sample.parent, env=env
    )
    assert result.returncode == 1, result.stderr
    assert "ACF001" in result.stdout


def test_suppression_comment_silences_exactly_its_finding(sample: Path) -> None:
    fabric = sample / "train_fabric.py"
    text = fabric.read_text()
    fabric.write_text(text.replace("fused=True)", "fused=True)  # amp-clipfix: ignore[ACF001]"))
    result = invoke("check", "sample_project")
    assert "ACF001" not in result.output.replace("ignore[ACF001]", "")
    assert "ACF002" in result.output and "1 suppressed" in result.output
    assert result.exit_code == 1
    fixed = invoke("apply", "--yes", "sample_project")
    assert fixed.exit_code == 0, fixed.output
    assert b'precision="16-mixed"' in fabric.read_bytes()


def test_noqa_with_another_code_does_not_suppress(sample: Path) -> None:
    fabric = sample / "train_fabric.py"
    fabric.write_text(fabric.read_text().replace("fused=True)", "fused=True)  # noqa: ACF002"))
    assert "train_fabric.py:18:9: ACF001" in invoke("check", "sample_project").output


def test_config_sets_the_strategy_and_the_command_line_overrides_it(sample: Path) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.amp-clipfix]\nstrategy = "unfuse"\n')
    configured = invoke("check", "sample_project")
    assert "fix (unfuse): safe:" in configured.output and "fix (unscale" not in configured.output
    overridden = invoke("check", "--strategy", "bf16", "sample_project")
    assert "fix (bf16): unsafe:" in overridden.output


def test_bad_config_is_a_one_line_usage_error(sample: Path) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.amp-clipfix]\nstratgy = "unfuse"\n')
    result = invoke("check", "sample_project")
    assert result.exit_code == 2
    assert "unknown key 'stratgy'" in result.output


def test_json_and_github_formats(sample: Path) -> None:
    import json

    document = json.loads(invoke("check", "--format", "json", "sample_project").output)
    codes = sorted(finding["code"] for finding in document["findings"])
    # the Fabric clip by norm under fp16 is also ACF007's (an overflow step would raise); its
    # fix is ACF001's helper on the same call
    assert codes == ["ACF001", "ACF002", "ACF007"]
    joined = next(f for f in document["findings"] if f["code"] == "ACF007")
    assert (joined["line"], joined["fix"]["strategy"]) == (18, "unscale")
    assert "clip_gradients_unscaled(fabric, ...)" in joined["fix"]["safety"]
    fabric = next(f for f in document["findings"] if f["code"] == "ACF001")
    assert (fabric["path"], fabric["line"], fabric["column"]) == (
        "sample_project/train_fabric.py",
        18,
        9,
    )
    assert (fabric["fix"]["strategy"], fabric["fix"]["applicability"]) == ("unscale", "safe")
    replacements = [edit["replacement"] for edit in fabric["fix"]["edits"]]
    assert "def clip_gradients_unscaled(" in replacements[0]
    assert replacements[-1].strip() == (
        "clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)"
    )
    github = invoke("check", "--format", "github", "sample_project").output
    assert "::error file=sample_project/train_fabric.py,line=18,col=9" in github


def test_explain_prints_the_rule_page() -> None:
    page = invoke("explain", "acf002")
    assert page.exit_code == 0
    assert "does not allow for gradient clipping" in page.output
    assert invoke("explain", "ACF999").exit_code == 2


def test_stdin_check_and_apply(sample: Path) -> None:
    code = (sample / "train_fabric.py").read_bytes()
    checked = CliRunner().invoke(main, ["check", "-", "--stdin-filename", "train.py"], input=code)
    assert checked.exit_code == 1 and "train.py:18:9: ACF001" in checked.output
    fixed = CliRunner().invoke(main, ["apply", "-", "--stdin-filename", "train.py"], input=code)
    assert fixed.exit_code == 0
    unscaled = b"        clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)\n"
    assert fixed.stdout_bytes.count(b"def clip_gradients_unscaled(") == 1
    assert unscaled in fixed.stdout_bytes
    assert b'"16-mixed"' in fixed.stdout_bytes and b"fused=True" in fixed.stdout_bytes


@pytest.mark.parametrize(
    ("environment", "table"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"TTY_COMPATIBLE": "1"}, True)],
)
def test_the_summary_table_ends_a_run_only_where_rich_sees_a_terminal(
    sample: Path, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], table: bool
) -> None:
    """Piped, rich is not even imported; a variable that forces a terminal still gets the
    table, as rich decides it."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, ["check", "."])
    assert result.exit_code == 1
    assert ("amp-clipfix summary" in result.output) is table
