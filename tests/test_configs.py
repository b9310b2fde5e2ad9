"""LightningCLI / Hydra YAML: broken files, suppressions, and byte-exact edits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def cli_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "yaml_cli_trainer_and_optimizer_unfuse" / "input", project)
    monkeypatch.chdir(project)
    return project


def invoke(*args: str):  # noqa: ANN201
    return CliRunner().invoke(main, [*args, "--lightning-version", "2.6.6", "."])


def test_there_are_enough_yaml_cases() -> None:
    assert len([path for path in FIXTURES.glob("yaml_*") if (path / "input").is_dir()]) >= 8


def test_apply_changes_exactly_the_fused_line(cli_project: Path) -> None:
    config = cli_project / "config.yaml"
    before = config.read_bytes()
    assert invoke("apply", "--yes").exit_code == 0
    fixed = before.replace(b"fused: true  # speed", b"fused: false  # speed")
    assert config.read_bytes() == fixed
    assert invoke("apply", "--yes").exit_code == 0
    assert config.read_bytes() == fixed  # a second run changes nothing


def test_broken_yaml_is_one_line_and_the_run_goes_on(cli_project: Path) -> None:
    (cli_project / "broken.yaml").write_text("optimizer:\n  fused: [true\n")
    result = invoke("apply", "--yes")
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if is_error_line(line)]
    assert len(errors) == 1 and "broken.yaml" in errors[0] and "cannot parse YAML" in errors[0]
    assert "Traceback" not in result.output
    assert b"fused: false" in (cli_project / "config.yaml").read_bytes()


def test_suppression_comment_in_yaml(cli_project: Path) -> None:
    config = cli_project / "config.yaml"
    config.write_text(config.read_text().replace("# speed", "# amp-clipfix: ignore[ACF002]"))
    result = invoke("check")
    assert result.exit_code == 0, result.output
    assert "1 suppressed" in result.output


def test_crlf_yaml_keeps_its_bytes(cli_project: Path) -> None:
    config = cli_project / "config.yaml"
    crlf = config.read_bytes().replace(b"\n", b"\r\n")
    config.write_bytes(crlf)
    assert invoke("apply", "--yes").exit_code == 0
    assert config.read_bytes() == crlf.replace(b"fused: true", b"fused: false")
