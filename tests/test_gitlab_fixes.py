"""`check --format gitlab` shows no fix, so it works none out (options.EDIT_FORMATS: json,
sarif and rdjson show each fix's edits). The report, its exit code and its error lines are
the same bytes as when the fixes were worked out, on the bundled sample (every strategy's
fixes) and on a project whose one finding has a fix that libcst verifies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_startup import imported_modules, project

from amp_clipfix import running
from amp_clipfix.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample_project"


def checked(root: Path, *arguments: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(
        main, ["check", "--no-cache", *arguments, str(root)], catch_exceptions=False
    )
    return done.exit_code, done.stdout, done.stderr


@pytest.mark.parametrize("strategy", ["auto", "unscale", "unfuse", "bf16", "guard"])
def test_the_gitlab_report_is_the_same_without_the_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    root = shutil.copytree(SAMPLE, tmp_path / "sample")
    arguments = ("--format", "gitlab", "--strategy", strategy)
    shown = checked(root, *arguments)
    assert shown[0] == 1 and '"check_name": "ACF001"' in shown[1]
    monkeypatch.setattr(running, "EDIT_FORMATS", (*running.EDIT_FORMATS, "gitlab"))
    assert checked(root, *arguments) == shown


def test_a_gitlab_report_never_loads_the_fixes(tmp_path: Path) -> None:
    """A fused optimizer under fp16 with clipping: JSON carries the fix's edits, verified by
    parsing the edited module with libcst; the GitLab report of the same finding does not
    load libcst."""
    root = project(tmp_path, fused=True)
    fixes = {"libcst", "libcst._parser.entrypoints"}
    modules, done = imported_modules(root, "check", "--format", "json", ".")
    assert done.returncode == 1 and '"edits": [' in done.stdout
    assert fixes <= modules
    modules, done = imported_modules(root, "check", "--format", "gitlab", ".")
    assert done.returncode == 1 and '"check_name": "ACF' in done.stdout
    assert fixes & modules == set()
