"""`--force-exclude` (ruff's): excludes hold for paths named on the command line too, which is how
pre-commit names files; an excluded named path is reported as excluded, never as "no Python
files"; a named pin file checks its whole project (issue 26)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amp_clipfix.cli import main

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "examples" / "sample_project" / "train_fabric.py").read_text()
FINDING = "ACF001"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "-j", "1", "--no-cache"], catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    (root / "legacy").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0"\n\n[tool.amp-clipfix]\n'
        'exclude = ["legacy"]\nextend-exclude = ["*_gen.py"]\n'
    )
    (root / "legacy" / "train.py").write_text(TRAIN)
    (root / "model_gen.py").write_text(TRAIN)
    (root / "train.py").write_text(TRAIN.replace("fused=True", "fused=False"))
    monkeypatch.chdir(tmp_path)
    return root


@pytest.mark.parametrize(
    ("named", "reason"),
    [
        ("proj/legacy/train.py", "matches exclude 'legacy'"),
        ("proj/legacy", "matches exclude 'legacy'"),
        ("proj/model_gen.py", "matches exclude '*_gen.py'"),
    ],
)
def test_force_exclude_skips_an_excluded_named_path_and_says_so(
    project: Path, named: str, reason: str
) -> None:
    kept = invoke("check", named)
    assert kept.exit_code == 1 and f"{named.split('/')[1]}" in kept.stdout  # named: checked
    assert FINDING in kept.stdout
    forced = invoke("check", "--force-exclude", named)
    assert forced.exit_code == 0, forced.output
    assert FINDING not in forced.stdout
    assert f"warning: {named}: excluded ({reason}); skipped (--force-exclude)\n" in forced.stderr
    assert "no Python files" not in forced.output


def test_force_exclude_with_the_command_lines_exclude(project: Path) -> None:
    """`--exclude` replaces the configuration's `exclude`; `extend-exclude` still adds."""
    result = invoke("check", "--force-exclude", "--exclude", "train.py", "proj/train.py")
    assert "warning: proj/train.py: excluded (matches exclude 'train.py')" in result.stderr
    legacy = invoke("check", "--force-exclude", "--exclude", "other", "proj/legacy/train.py")
    assert legacy.stderr == ""  # `legacy` is no longer excluded
    assert FINDING in legacy.stdout
    generated = invoke("check", "--force-exclude", "--exclude", "other", "proj/model_gen.py")
    assert "excluded (matches exclude '*_gen.py')" in generated.stderr


def test_force_exclude_keeps_what_is_not_excluded(project: Path) -> None:
    result = invoke("check", "--force-exclude", "proj/train.py", "proj/legacy/train.py")
    # the kept file is checked: its fused=False optimizer is no ACF001, but its fp16 Fabric
    # clip by norm is ACF007's (Fabric's default error_if_nonfinite=True raises on overflow)
    assert result.exit_code == 1 and "1 finding " in result.stdout
    assert "proj/train.py:18:9: ACF007" in result.stdout
    assert FINDING not in result.stdout and "legacy" not in result.stdout
    assert "warning: proj/legacy/train.py: excluded" in result.stderr
    assert "proj/train.py: excluded" not in result.stderr


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_a_named_folder_in_site_packages_is_reported_as_excluded(project: Path) -> None:
    package = project / ".venv" / "lib" / "python3.12" / "site-packages" / "pkg"
    package.mkdir(parents=True)
    (package / "train.py").write_text(TRAIN)
    named = "proj/.venv/lib/python3.12/site-packages/pkg"
    walked = invoke("check", named)  # named and not forced: read, as ruff reads it
    assert "1 file checked" in walked.stdout and walked.stderr == ""
    forced = invoke("check", "--force-exclude", named)
    assert (
        f"warning: {named}: excluded (inside '.venv', skipped by default); skipped "
        "(--force-exclude)" in forced.stderr
    )
    git(project, "init", "-q")
    (project / ".gitignore").write_text(".venv/\n")
    ignored = invoke("check", named)
    assert f"warning: {named}: excluded (ignored by git); nothing read" in ignored.stderr
    assert "no Python files" not in ignored.output
    empty = project / "empty"
    empty.mkdir()
    assert "warning: proj/empty: no Python files" in invoke("check", "proj/empty").stderr


@pytest.mark.parametrize(
    "pin",
    ["pyproject.toml", "requirements.txt", "requirements-dev.txt", "uv.lock", "setup.cfg"],
)
def test_a_named_pin_file_checks_its_whole_project(project: Path, pin: str) -> None:
    """What pre-commit passes when a commit changes only a pin: the pin's project is checked
    (all its findings), and the pin itself is never read as code."""
    if pin != "pyproject.toml":
        (project / pin).write_text("" if pin != "setup.cfg" else "[metadata]\nname = proj\n")
    fused = project / "train.py"
    fused.write_text(TRAIN)
    result = invoke("check", "--force-exclude", f"proj/{pin}")
    assert result.exit_code == 1, result.output
    assert f"proj/train.py:18:9: {FINDING}" in result.stdout
    assert "legacy" not in result.stdout and "model_gen" not in result.stdout  # still excluded
    assert "cannot parse" not in result.output and "error:" not in result.output


def test_a_named_pin_decides_the_release_it_names(project: Path, tmp_path: Path) -> None:
    """pytorch-lightning 1.9 has no Fabric clip: the same code is a finding only on 2.x."""
    (project / "train.py").write_text(TRAIN)
    requirements = project / "requirements.txt"
    requirements.write_text("lightning==1.9.5\n")
    assert invoke("check", "proj/requirements.txt").exit_code == 0
    requirements.write_text("lightning==2.4.0\n")
    result = invoke("check", "proj/requirements.txt")
    assert result.exit_code == 1 and "assumed lightning 2.4.0 from" in result.stdout


def test_an_excluded_pin_folder_copy_is_not_needed(project: Path) -> None:
    """A pin in a sub-folder without a project marker belongs to the enclosing project."""
    docs = project / "docs"
    docs.mkdir()
    (docs / "requirements.txt").write_text("sphinx\n")
    (project / "train.py").write_text(TRAIN)
    result = invoke("check", "proj/docs/requirements.txt")
    assert result.exit_code == 1 and f"proj/train.py:18:9: {FINDING}" in result.stdout
    shutil.rmtree(docs)


def test_force_exclude_with_stdin_leaves_an_excluded_buffer_alone(project: Path) -> None:
    """An editor pipes the buffer with `--stdin-filename`: an excluded name is not checked
    (ruff's rule), and `apply -` gives the code back unchanged."""
    name = "proj/legacy/train.py"
    checked = CliRunner().invoke(
        main, ["check", "--force-exclude", "--stdin-filename", name, "-"], input=TRAIN
    )
    assert checked.exit_code == 0 and FINDING not in checked.stdout
    assert f"warning: {name}: excluded (matches exclude 'legacy')" in checked.stderr
    applied = CliRunner().invoke(
        main, ["apply", "--force-exclude", "--stdin-filename", name, "-"], input=TRAIN
    )
    assert applied.exit_code == 0 and applied.stdout == TRAIN
    plain = CliRunner().invoke(main, ["check", "--stdin-filename", name, "-"], input=TRAIN)
    assert plain.exit_code == 1 and FINDING in plain.stdout  # named without --force-exclude


def test_a_named_empty_folder_is_noted_in_a_partial_run(project: Path) -> None:
    """A named file brings in its project's root (no note for that root); a named folder beside
    it still gets its own note."""
    (project / "empty").mkdir()
    result = invoke("check", "proj/empty", "proj/train.py")
    assert "warning: proj/empty: no Python files, notebooks or configs found" in result.stderr
    assert str(project) not in result.stderr
