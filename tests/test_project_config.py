"""Each project's `[tool.amp-clipfix]` applies to its own files only, every key (issue 26).

A run over several projects must give each project exactly what a run over that project alone
gives: the first PATH's configuration used to become the run's base options, so a project without
a configuration of its own took the first one's strategy, excludes, release and helper module.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amp_clipfix.cli import main

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample_project"

# One value per key of the table; each changes what `check` or `apply` gives for the sample.
KEYS = {
    "strategy": 'strategy = "guard"',
    "lightning-version": 'lightning-version = "1.9.5"',
    "exclude": 'exclude = ["train_fabric.py"]',
    "extend-exclude": 'extend-exclude = ["model.py"]',
    "select": 'select = ["ACF002"]',
    "ignore": 'ignore = ["ACF001"]',
    "extend-select": 'select = ["ACF002"]\nextend-select = ["ACF007"]',
    "per-file-ignores": 'per-file-ignores = {"model.py" = ["ACF002"]}',
    "helper-module": 'helper-module = "amp_helpers"',
}


def test_every_key_of_the_table_is_covered() -> None:
    from amp_clipfix.project.config import KEYS as TABLE_KEYS

    assert set(KEYS) == set(TABLE_KEYS)


def cli(*args: str) -> Result:
    """The command in this process, in the folder holding both projects (stdout is not a
    terminal: the patch is plain)."""
    return CliRunner().invoke(main, [*args, "-j", "1"], catch_exceptions=False)


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("configured", "plain"):
        shutil.copytree(SAMPLE, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def configure(root: Path, line: str) -> None:
    pyproject = root / "configured" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f"\n[tool.amp-clipfix]\n{line}\n")


def findings_of(document: dict, project: str) -> list[dict]:
    return [f for f in document["findings"] if f["path"].startswith(f"{project}/")]


def project_entry(document: dict, project: str) -> dict:
    return next(p for p in document["summary"]["projects"] if p["root"] == project)


def patch_of(patch: str, project: str) -> list[str]:
    """The lines of a plain patch about `project`: its notes and its files' headers and hunks."""
    lines, current = [], None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            current = line.removeprefix("+++ b/").split("/", 1)[0]
        if line.startswith("# "):
            if f" {project}/" in line:
                lines.append(line)
        elif line.startswith("--- "):
            pending = line
        elif current == project:
            if line.startswith("+++ "):
                lines.append(pending)
            lines.append(line)
    return lines


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("order", [("configured", "plain"), ("plain", "configured")])
def test_a_joint_run_gives_each_project_what_a_run_over_it_alone_gives(
    projects: Path, key: str, order: tuple[str, str]
) -> None:
    configure(projects, KEYS[key])
    joint = json.loads(cli("check", "--format", "json", *order).stdout)
    joint_patch = cli("apply", "--dry-run", *order).stdout
    for project in order:
        alone = json.loads(cli("check", "--format", "json", project).stdout)
        assert findings_of(joint, project) == findings_of(alone, project), (key, project)
        assert project_entry(joint, project) == project_entry(alone, project)
        alone_patch = cli("apply", "--dry-run", project).stdout
        assert patch_of(joint_patch, project) == patch_of(alone_patch, project), (key, project)
    # and the key did change something for the configured project (the test can fail)
    configured = json.loads(cli("check", "--format", "json", "configured").stdout)
    plain = json.loads(cli("check", "--format", "json", "plain").stdout)
    configured_patch = cli("apply", "--dry-run", "configured").stdout
    plain_patch = cli("apply", "--dry-run", "plain").stdout
    differs = (
        json.dumps(findings_of(configured, "configured")).replace("configured/", "")
        != json.dumps(findings_of(plain, "plain")).replace("plain/", "")
        or project_entry(configured, "configured")["assumed"]
        != project_entry(plain, "plain")["assumed"]
        or configured_patch.replace("configured/", "") != plain_patch.replace("plain/", "")
    )
    assert differs, key


def test_apply_yes_writes_guard_only_where_it_is_configured(projects: Path) -> None:
    """The measured case: `apply --yes a b` where only a's pyproject.toml asks for guard."""
    configure(projects, 'strategy = "guard"')
    result = cli("apply", "--yes", "configured", "plain")
    assert result.exit_code == 1, result.stderr  # a's Trainer finding has no guard fix
    assert "fixable with each project's strategy" in result.stderr
    assert "can_clip_gradients" in (projects / "configured" / "train_fabric.py").read_text()
    plain = (projects / "plain" / "train_fabric.py").read_text()
    assert "can_clip_gradients" not in plain and "clip_gradients_unscaled(" in plain
    assert "def configure_gradient_clipping(" in (projects / "plain" / "model.py").read_text()


def test_json_names_each_projects_strategy(projects: Path) -> None:
    configure(projects, 'strategy = "unfuse"')
    document = json.loads(cli("check", "--format", "json", "configured", "plain").stdout)
    assert project_entry(document, "configured")["strategy"] == "unfuse"
    assert project_entry(document, "plain")["strategy"] == "auto"
    forced = cli("check", "--format", "json", "--strategy", "bf16", "configured", "plain")
    document = json.loads(forced.stdout)
    assert document["summary"]["strategy"] == "bf16"
    assert {p["strategy"] for p in document["summary"]["projects"]} == {"bf16"}
