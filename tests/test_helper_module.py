"""`helper-module` in [tool.amp-clipfix]: the fixes import their helpers from one module of the
project, which the run creates (a new file in the patch that `git apply` creates) or completes;
a name that is not a module name, or one that resolves outside the project, is refused with one
line and nothing is written."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CREATED = FIXTURES / "trainer_unscale_helper_module_created"


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {"__pycache__", ".git", ".amp_clipfix_cache"} & set(p.parts)
    }


def invoke(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # noqa: ANN201
    monkeypatch.chdir(project)
    options = ["--strategy", "unscale", "--lightning-version", "2.6.6", "."]
    return CliRunner().invoke(main, [*args, *options], catch_exceptions=False)


def with_config(tmp_path: Path, helper_module: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(CREATED / "input", project)
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n\n[tool.amp-clipfix]\nhelper-module = {helper_module}\n'
    )
    return project


def test_the_plain_patch_creates_the_helper_module_with_git_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    shutil.copytree(CREATED / "input", project)
    result = invoke(project, monkeypatch, "apply", "--dry-run")
    patch = result.stdout
    assert "--- /dev/null\n+++ b/mypkg/amp_helpers.py\n@@ -0,0 +1," in patch, patch
    assert not (project / "mypkg" / "amp_helpers.py").exists(), "a dry run writes nothing"
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "apply"], cwd=project, input=patch.encode(), check=True)
    assert tree(project) == tree(CREATED / "expected")


def test_apply_creates_the_module_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    shutil.copytree(CREATED / "input", project)
    result = invoke(project, monkeypatch, "apply", "--yes")
    assert result.exit_code == 0, result.output
    assert "Fixed 2 files." in result.stderr
    helpers = (project / "mypkg" / "amp_helpers.py").read_text()
    assert helpers.count("def clip_module_gradients_unscaled(") == 1
    model = (project / "mypkg" / "model.py").read_text()
    assert "from mypkg.amp_helpers import clip_module_gradients_unscaled\n" in model
    assert "def clip_module_gradients_unscaled(" not in model, "imported, not copied"


@pytest.mark.parametrize("value", ['"mypkg..helpers"', '"class.helpers"', '"../evil"', "3"])
def test_an_invalid_module_name_is_one_line_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    project = with_config(tmp_path, value)
    before = tree(project)
    result = invoke(project, monkeypatch, "apply", "--yes")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if "helper-module" in line]
    assert len(lines) == 1 and "must be a dotted module name" in lines[0], result.stderr
    assert tree(project) == before


def test_a_module_outside_the_project_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = with_config(tmp_path, '"shared.amp_helpers"')
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "shared").symlink_to(outside, target_is_directory=True)
    before = tree(project)
    result = invoke(project, monkeypatch, "apply", "--yes")
    assert result.exit_code == 2, result.output
    assert "resolves outside the project" in result.stderr, result.stderr
    assert "skipped" in result.stderr
    assert tree(project) == before
    assert not any(outside.iterdir()), "nothing may be written outside the project"
