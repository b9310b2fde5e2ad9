"""The commands of the README and the docs work as written, `--help` says what the code does,
and the project's metadata, LICENSE and GitHub Action hold what they promise (issue 26)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import docpages as docs
import pytest
import yaml
from click.testing import CliRunner
from test_packaging import copy_of_the_project

from amp_clipfix.cli import main
from amp_clipfix.models import Strategy
from amp_clipfix.strategies import AUTO_ORDER, DOES, auto_description, is_safe

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
README = docs.text("README.md")
ALL_DOCS = "\n".join(path.read_text(encoding="utf-8") for path in docs.pages())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SAMPLE = REPO / "examples" / "sample_project"
FSDP_CASE = REPO / "fixtures" / "fabric_fsdp_unscale_refused_auto_unfuses" / "input"
# sha256 of the Apache License 2.0 as apache.org publishes it (LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def one_line(text: str) -> str:
    return " ".join(text.split())


# --- --strategy: the help says what auto does -------------------------------------------------


def test_the_strategy_help_names_what_auto_picks() -> None:
    help_text = one_line(CliRunner().invoke(main, ["check", "--help"]).output)
    assert auto_description() in help_text
    assert "auto picks unscale where it applies, else unfuse" in auto_description()
    assert [s.value for s in AUTO_ORDER] == ["unscale", "unfuse"]
    for strategy in DOES:
        label = "safe" if is_safe(strategy) else "unsafe"
        assert f"{strategy.value} {one_line(DOES[strategy])}, {label}" in help_text
    assert set(DOES) == set(Strategy) - {Strategy.AUTO}
    assert not any(is_safe(s) for s in (Strategy.BF16, Strategy.GUARD))


def fix_strategies(folder: Path) -> dict[str, set[str]]:
    """The strategies of the fixes `check` chose, by finding code."""
    result = CliRunner().invoke(
        main, ["check", "--format", "json", "--no-cache", "-j", "1", str(folder)]
    )
    found: dict[str, set[str]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        if finding["fix"]:
            found.setdefault(finding["code"], set()).add(finding["fix"]["strategy"])
    return found


def test_auto_picks_what_the_help_says(tmp_path: Path) -> None:
    """The first of AUTO_ORDER where it applies (the sample), the next where it does not (a
    sharded Fabric), never an unsafe one. The sample's Fabric clip by norm under fp16 is also
    ACF007's, whose fix joins ACF001's unscale (the same helper); the FSDP Fabric's clip never
    reaches torch's clip_grad_norm_, so it is not."""
    shutil.copytree(SAMPLE, tmp_path / "sample")
    shutil.copytree(FSDP_CASE, tmp_path / "fsdp")
    first, second = AUTO_ORDER[0].value, AUTO_ORDER[1].value
    assert fix_strategies(tmp_path / "sample") == {
        "ACF001": {first},
        "ACF002": {first},
        "ACF007": {first},
    }
    assert fix_strategies(tmp_path / "fsdp") == {"ACF001": {second}}


def test_the_readme_lists_every_strategy_and_what_auto_picks() -> None:
    commands = docs.text("commands.md")
    choices = [s.value for s in Strategy]
    assert f"--strategy [{'|'.join(choices)}]" in commands
    assert "auto picks unscale where it applies, else unfuse" in one_line(commands)
    assert "bf16, guard and native are unsafe" in one_line(commands)


# --- the dry-run recipe ------------------------------------------------------------------------


def recipe() -> str:
    lines = [
        line
        for block in docs.code_blocks(ALL_DOCS, "bash")
        for line in block.splitlines()
        if "apply --dry-run src/ > fix.patch" in line
    ]
    assert len(set(lines)) == 1, lines  # the README and docs/commands.md give the same one
    return lines[0]


def run_recipe(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", recipe()], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_the_dry_run_recipe_applies_as_written(tmp_path: Path) -> None:
    assert "&& git apply" not in recipe().split(";")[0]  # a dry run with changes exits 1
    work, reference = tmp_path / "work", tmp_path / "reference"
    for folder in (work, reference):
        shutil.copytree(SAMPLE, folder / "src", ignore=shutil.ignore_patterns(".*_cache"))
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    applied = run_recipe(work)
    assert applied.returncode == 0, applied.stderr
    fixed = CliRunner().invoke(main, ["apply", "--yes", "--no-cache", str(reference / "src")])
    assert fixed.exit_code == 0, fixed.output
    for path in sorted((reference / "src").glob("*.py")):
        assert (work / "src" / path.name).read_bytes() == path.read_bytes(), path.name
    again = run_recipe(work)  # nothing left: an empty patch, still exit 0
    assert again.returncode == 0, again.stderr
    assert (work / "fix.patch").read_bytes() == b""


def test_the_dry_run_recipe_does_not_apply_after_an_error(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "src")
    (tmp_path / "src" / "broken.py").write_text("import torch\ntorch.optim.AdamW(fused=True\n")
    result = run_recipe(tmp_path)
    assert result.returncode != 0
    assert b"fused=True" in (tmp_path / "src" / "model.py").read_bytes()


# --- install, metadata, LICENSE ------------------------------------------------------------------


def test_the_readme_installs_from_git_not_from_the_package_index() -> None:
    for block in docs.code_blocks(ALL_DOCS, "bash") + docs.code_blocks(ALL_DOCS, "yaml"):
        for line in block.splitlines():
            assert not re.search(r"pip install (-U )?amp-clipfix\b", line), line
    install = docs.text("install.md")
    assert "`pip install amp-clipfix` will work once it is\npublished" in install
    source = PYPROJECT["project"]["urls"]["Source"]
    for text in (install, README):
        assert f"git clone {source} " in text and f"git+{source}@main" in text
    assert "v0.5.0" not in "".join(docs.code_blocks(ALL_DOCS, "yaml"))  # a tag it lacks


def test_requires_python_is_what_the_dependencies_need() -> None:
    """click>=8.2 needs Python 3.10; ruff's target follows requires-python."""
    from packaging.specifiers import SpecifierSet

    ours = SpecifierSet(PYPROJECT["project"]["requires-python"])
    clicks = SpecifierSet(importlib.metadata.metadata("click")["Requires-Python"])
    assert "click>=8.2" in PYPROJECT["project"]["dependencies"]
    assert "3.9.18" not in ours and "3.10.0" in ours and "3.10.0" in clicks
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py310"


def test_the_license_is_the_full_apache_text_that_pyproject_names() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    urls = PYPROJECT["project"]["urls"]
    assert {"Homepage", "Source", "Issues"} <= set(urls)
    assert all(
        url.startswith("https://github.com/amp-clipfix/amp-clipfix") for url in urls.values()
    )


# --- the GitHub Action ---------------------------------------------------------------------------

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def uses_lines() -> list[str]:
    texts = [
        (REPO / "action.yml").read_text(),
        (REPO / "examples" / "github-workflow.yml").read_text(),
        *docs.code_blocks(ALL_DOCS, "yaml"),
    ]
    return [
        line.split("uses:", 1)[1].strip()
        for text in texts
        for line in text.splitlines()
        if "uses:" in line and not line.strip().startswith("#")
    ]


def test_every_action_used_is_pinned_by_commit_sha_with_its_version() -> None:
    uses = [u for u in uses_lines() if not u.startswith("amp-clipfix/amp-clipfix@")]
    assert len(uses) >= 5
    for line in uses:
        assert PINNED.match(line), line


def test_every_input_and_output_is_documented() -> None:
    actions = docs.text("integrations/github-action.md")
    for name in (*ACTION["inputs"], *ACTION["outputs"]):
        assert f"`{name}`" in actions, name
    for mode in ("auto", "sarif", "annotations", "reviewdog"):
        assert f"| `{mode}` |" in actions, mode


def check_step() -> str:
    return next(step["run"] for step in ACTION["runs"]["steps"] if step.get("id") == "check")


@pytest.mark.parametrize(
    ("event", "head", "actor", "chosen"),
    [
        ("pull_request", "someone/fork", "someone", "annotations"),
        ("pull_request", "amp/project", "dependabot[bot]", "annotations"),
        ("pull_request", "amp/project", "maintainer", "sarif"),
        ("push", "", "maintainer", "sarif"),
    ],
)
def test_auto_report_is_fork_safe(
    tmp_path: Path, event: str, head: str, actor: str, chosen: str
) -> None:
    """The action's own step, run with what GitHub sets: a fork's pull request gets workflow
    annotations (no token needed), other runs SARIF."""
    shutil.copytree(SAMPLE, tmp_path / "sample")
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PATHS": "sample",
        "REPORT": "auto",
        "ARGS": "--no-cache",
        "EVENT": event,
        "HEAD_REPOSITORY": head,
        "REPOSITORY": "amp/project",
        "ACTOR": actor,
        "GITHUB_OUTPUT": str(output),
    }
    result = subprocess.run(
        ["bash", "-e", "-c", check_step()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["report"] == chosen and outputs["exit-code"] == "1"
    if chosen == "annotations":
        assert outputs["report-file"] == ""
        assert "::error file=sample/train_fabric.py,line=18" in result.stdout
    else:
        assert outputs["report-file"] == "amp-clipfix.sarif"
        sarif = json.loads((tmp_path / "amp-clipfix.sarif").read_text())
        assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]


def test_a_fresh_clone_builds_a_wheel_that_runs(tmp_path: Path) -> None:
    """What `pip install ./amp-clipfix` builds from a clone (the tracked files, nothing beside
    them): its metadata says what pyproject says, it carries the LICENSE, and it runs."""
    clone = copy_of_the_project(tmp_path / "amp-clipfix", leave_out=("fixtures/", "tests/"))
    build = f"import setuptools.build_meta as b; b.build_wheel({str(tmp_path / 'dist')!r})"
    built = subprocess.run(  # what pip's PEP 517 build runs, without isolation (no pip needed)
        [sys.executable, "-c", build], cwd=clone, capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("amp_clipfix-*.whl")
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        license_name = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert archive.read(license_name) == (REPO / "LICENSE").read_bytes()
    head = metadata.decode().split("\n\n", 1)[0].splitlines()
    assert "Requires-Python: >=3.10" in head and "License-Expression: Apache-2.0" in head
    assert "Project-URL: Source, https://github.com/amp-clipfix/amp-clipfix" in head
    env = {**os.environ, "PYTHONPATH": str(wheel)}
    ran = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", str(SAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1 and "ACF001" in ran.stdout, ran.stderr
