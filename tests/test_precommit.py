"""The pre-commit hooks as a user meets them: real `pre-commit`, real git commits, temporary repos.

The hook repository is a fresh git repository holding a copy of this checkout's installable files
(not a clone of it), so uncommitted work is what gets tested. Its hook environment is built once
per session (pip installs the package and its dependencies from the configured package index).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HOOKS_FILE = ".pre-commit-hooks.yaml"
# What `pip install` of the hook repository needs; nothing else is copied.
INSTALLABLE = ("pyproject.toml", "docs/pypi.md", "LICENSE", "src", HOOKS_FILE)  # pypi.md: readme
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*_cache")
# Under pytest-xdist the whole file runs on one worker, which builds the hook environment once.
pytestmark = pytest.mark.xdist_group("precommit")

TRAIN = """\
import lightning as L
import torch
from torch import nn


def main():
    fabric = L.Fabric(accelerator="cuda", devices=1, precision="16-mixed")
    fabric.launch()
    model = nn.Linear(32, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    for _ in range(10):
        loss = model(torch.randn(8, 32, device=fabric.device)).pow(2).mean()
        optimizer.zero_grad()
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()


if __name__ == "__main__":
    main()
"""


@dataclass(frozen=True)
class HookRepo:
    """A committed hook repository, the pinned revision, and the environment to run git in."""

    path: Path
    sha: str
    env: dict[str, str]


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing stdout and stderr together as pre-commit prints to both."""
    return subprocess.run(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )


def git(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """git that must succeed: test setup, not the behaviour under test."""
    result = run(["git", *args], repo, env)
    assert result.returncode == 0, f"git {' '.join(args)} failed:\n{result.stdout}"
    return result


def pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The pre-commit of this interpreter: the one the test dependency group installs."""
    return run([sys.executable, "-m", "pre_commit", *args], repo, env)


def isolated_env(home: Path) -> dict[str, str]:
    """Environment for git and pre-commit that ignores the user's git config and hook settings.

    Identity comes from GIT_AUTHOR_* / GIT_COMMITTER_*, never from a global config; PIP_* is
    kept because building the hook environment installs from the machine's package index.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT")) and key not in {"SKIP", "NO_COLOR"}
    }
    empty_config = home / "gitconfig"
    empty_config.touch()
    env.update(
        GIT_CONFIG_GLOBAL=str(empty_config),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="amp-clipfix tests",
        GIT_AUTHOR_EMAIL="tests@amp-clipfix.invalid",
        GIT_COMMITTER_NAME="amp-clipfix tests",
        GIT_COMMITTER_EMAIL="tests@amp-clipfix.invalid",
        PRE_COMMIT_HOME=str(home / "pre-commit-home"),
    )
    return env


def init_repo(path: Path, env: dict[str, str]) -> None:
    git(path, env, "init", "--quiet", "--initial-branch=main", str(path))


def write_config(root: Path, hooks: HookRepo, hook_ids: list[str]) -> Path:
    """A git repository whose .pre-commit-config.yaml pins the hook repository's revision."""
    root.mkdir()
    init_repo(root, hooks.env)
    listed = "".join(f"      - id: {hook_id}\n" for hook_id in hook_ids)
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks.path}\n    rev: {hooks.sha}\n    hooks:\n{listed}"
    )
    return root


def user_repo(root: Path, hooks: HookRepo, hook_ids: list[str]) -> Path:
    """A user's repository with the hooks installed into git, so `git commit` runs them."""
    write_config(root, hooks, hook_ids)
    installed = pre_commit(root, hooks.env, "install")
    assert installed.returncode == 0, installed.stdout
    return root


def commit(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Stage everything and commit, so the git pre-commit hook decides."""
    git(repo, env, "add", "--all")
    return run(["git", "commit", "--message", "train"], repo, env)


def has_commit(repo: Path, env: dict[str, str]) -> bool:
    return run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], repo, env).returncode == 0


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    """Hook repository + its pre-commit environment, built once for every test in this file."""
    if importlib.util.find_spec("pre_commit") is None:
        pytest.fail(
            "pre-commit is not installed: install the test dependency group"
            " (pip install -e . --group test)",
            pytrace=False,
        )
    base = tmp_path_factory.mktemp("precommit")
    env = isolated_env(base)
    path = base / "hook-repo"
    path.mkdir()
    for name in INSTALLABLE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=IGNORED)
        else:
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    init_repo(path, env)
    git(path, env, "add", "--all")
    git(path, env, "commit", "--quiet", "--message", "hook repository")
    sha = git(path, env, "rev-parse", "HEAD").stdout.strip()
    hooks = HookRepo(path=path, sha=sha, env=env)

    # Both hooks share one environment (same repository and revision); build it here, once.
    builder = write_config(base / "build", hooks, ["amp-clipfix", "amp-clipfix-check"])
    built = pre_commit(builder, env, "install-hooks")
    assert built.returncode == 0, f"building the hook environment failed:\n{built.stdout}"
    return hooks


def test_check_hook_blocks_the_commit_then_lets_the_fixed_file_through(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    """The check-only hook is the CI gate: it must block the pattern and change nothing."""
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    train = repo / "train.py"
    train.write_text(TRAIN)

    blocked = commit(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    assert "amp-clipfix (check only)" in blocked.stdout and "Failed" in blocked.stdout
    assert "train.py:16:" in blocked.stdout and "ACF001" in blocked.stdout  # the clip call
    assert "files were modified by this hook" not in blocked.stdout
    assert not has_commit(repo, env)
    assert train.read_text() == TRAIN

    train.write_text(TRAIN.replace('precision="16-mixed"', 'precision="bf16-mixed"'))
    passed = commit(repo, env)
    assert passed.returncode == 0, passed.stdout
    assert "Passed" in passed.stdout
    assert has_commit(repo, env)


def test_fixing_hook_rewrites_the_file_and_the_fixed_commit_goes_through(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    """The fixing hook writes the fix and fails once, as pre-commit fixers do, then passes.

    Its fix is `auto`'s, unscale: the clip call goes through the inserted helper, the precision
    and the fused optimizer stay.
    """
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix"])
    train = repo / "train.py"
    train.write_text(TRAIN)

    fixed = commit(repo, env)
    assert fixed.returncode != 0, fixed.stdout
    assert "files were modified by this hook" in fixed.stdout
    assert not has_commit(repo, env)
    text = train.read_text()
    unscaled = "clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)"
    assert text.count("def clip_gradients_unscaled(") == 1 and unscaled in text
    assert 'precision="16-mixed"' in text and "fused=True" in text

    passed = commit(repo, env)
    assert passed.returncode == 0, passed.stdout
    assert "amp-clipfix" in passed.stdout and "Passed" in passed.stdout
    committed = git(repo, env, "show", "HEAD:train.py").stdout
    assert unscaled in committed


MODEL = """\
import lightning as L
import torch
from torch import nn


class Model(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(32, 1)

    def training_step(self, batch, batch_idx):
        return self.net(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)
"""
CLI_MAIN = """\
from lightning.pytorch.cli import LightningCLI

from model import Model

if __name__ == "__main__":
    LightningCLI(Model)
"""
CONFIG = 'trainer:\n  precision: "32-true"\n  gradient_clip_val: 0.5\n'
TRAINER = """\
import lightning as L

from scratch_model import Model

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""
NOTEBOOK = REPO / "fixtures" / "notebook_trainer_unfuse" / "input" / "train.ipynb"


def is_unscaled(before: str, after: str) -> bool:
    """auto's unscale fix: the module gains the helper and the override, nothing else changes."""
    return (
        after.count("def clip_module_gradients_unscaled(") == 1
        and after.count("def configure_gradient_clipping(") == 1
        and all(line in after.splitlines() for line in before.splitlines())
    )


def commit_without_hooks(repo: Path, env: dict[str, str], *paths: str) -> None:
    git(repo, env, "add", *paths)
    git(repo, env, "commit", "--quiet", "--no-verify", "--message", "setup")


def test_a_yaml_only_commit_is_checked_with_the_python_it_links_to(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    """LightningCLI: the YAML turns on mixed precision; the fused optimizer is in model.py,
    committed before and not staged now."""
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    (repo / "model.py").write_text(MODEL)
    (repo / "main.py").write_text(CLI_MAIN)
    (repo / "config.yaml").write_text(CONFIG)
    commit_without_hooks(repo, env, ".")
    (repo / "config.yaml").write_text(CONFIG.replace("32-true", "16-mixed"))

    blocked = commit(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    assert "amp-clipfix (check only)" in blocked.stdout and "Failed" in blocked.stdout
    assert "model.py:15:" in blocked.stdout and "ACF002" in blocked.stdout
    assert "config.yaml:2" in blocked.stdout  # the site in the staged file
    assert "(no files to check)" not in blocked.stdout


def test_the_fix_hook_fixes_a_yaml_only_commit_in_the_tracked_python(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix"])
    (repo / "model.py").write_text(MODEL)
    (repo / "main.py").write_text(CLI_MAIN)
    (repo / "config.yaml").write_text(CONFIG)
    # the hook's environment has no Lightning: without a pin the release is only assumed and
    # the unscale override (whose signature differs between 1.x and 2.x) is not written
    (repo / "requirements.txt").write_text("lightning==2.6.6\n")
    commit_without_hooks(repo, env, ".")
    (repo / "config.yaml").write_text(CONFIG.replace("32-true", "16-mixed"))

    fixed = commit(repo, env)
    assert fixed.returncode != 0 and "files were modified by this hook" in fixed.stdout
    assert is_unscaled(MODEL, (repo / "model.py").read_text())
    assert commit(repo, env).returncode == 0


def test_a_notebook_only_commit_is_checked(hook_repo: HookRepo, tmp_path: Path) -> None:
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    shutil.copy(NOTEBOOK, repo / "train.ipynb")

    blocked = commit(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    assert "train.ipynb:cell 2:10:68: ACF002" in blocked.stdout
    assert not has_commit(repo, env)


def test_an_untracked_file_is_neither_read_nor_written(hook_repo: HookRepo, tmp_path: Path) -> None:
    """An untracked scratch module with a fused optimizer must not block (or be rewritten by)
    the commit of a Trainer script: git does not know it, so neither do the hooks. The same
    file committed is linked and fixed."""
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check", "amp-clipfix"])
    scratch = repo / "scratch_model.py"
    scratch.write_text(MODEL)
    standalone = repo / "scratch_fabric.py"
    standalone.write_text(TRAIN)
    (repo / "train.py").write_text(TRAINER)
    git(repo, env, "add", "train.py", ".pre-commit-config.yaml")

    passed = run(["git", "commit", "--message", "train"], repo, env)
    assert passed.returncode == 0, passed.stdout
    assert "Failed" not in passed.stdout
    assert scratch.read_text() == MODEL and standalone.read_text() == TRAIN
    assert git(repo, env, "status", "--porcelain").stdout.count("??") == 2

    (repo / "train.py").write_text(TRAINER + "\n")
    git(repo, env, "add", "train.py", "scratch_model.py")
    blocked = run(["git", "commit", "--message", "tracked now"], repo, env)
    assert blocked.returncode != 0 and "ACF002" in blocked.stdout, blocked.stdout
    assert is_unscaled(MODEL, scratch.read_text())
    assert standalone.read_text() == TRAIN  # still untracked: untouched


# --- issue 26/28: option-like names, pin-only commits, excludes ------------------------------


def hook_definitions() -> list[dict]:
    import yaml

    return yaml.safe_load((REPO / HOOKS_FILE).read_text())


@pytest.mark.parametrize(
    ("name", "passed"),
    [
        ("train.py", True),
        ("pkg/-v.py", True),
        ("train.ipynb", True),
        ("conf/config.yaml", True),
        ("environment.yml", True),
        ("setup.py", True),
        ("pyproject.toml", True),
        ("sub/pyproject.toml", True),
        ("setup.cfg", True),
        ("requirements.txt", True),
        ("requirements-dev.txt", True),
        ("requirements/base.txt", True),
        ("uv.lock", True),
        ("poetry.lock", True),
        ("pdm.lock", True),
        ("Pipfile.lock", True),
        ("README.md", False),
        ("notes.txt", False),
        ("Cargo.lock", False),
        ("tox.ini", False),
    ],
)
def test_hooks_take_sources_and_every_pin_file_the_tool_reads(name: str, passed: bool) -> None:
    """pre-commit passes a file when `files` matches it: every kind of pin file that
    project/pins.py reads, and the sources; the hooks end their options with `--`."""
    import re

    from amp_clipfix.project.pins import is_pin_file

    for hook in hook_definitions():
        assert "types_or" not in hook and "types" not in hook  # `files` alone decides
        assert bool(re.search(hook["files"], name)) is passed, (hook["id"], name)
        assert hook["args"] == ["--"] and "--force-exclude" in hook["entry"].split()
    if name.endswith((".txt", ".lock", ".toml", ".cfg")):
        assert is_pin_file(Path(name)) is passed


def test_a_staged_file_named_like_an_option_is_checked(hook_repo: HookRepo, tmp_path: Path) -> None:
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    (repo / "-v.py").write_text(TRAIN)
    blocked = commit(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    assert "-v.py:16:9: ACF001" in blocked.stdout
    assert "No such option" not in blocked.stdout


def pinned_project(root: Path, lightning: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{root.name}"\nversion = "0"\n'
        f'dependencies = ["lightning=={lightning}"]\n'
    )
    (root / "train.py").write_text(TRAIN)


def test_a_commit_of_only_a_pin_checks_the_project_it_belongs_to(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    """pytorch-lightning 1.9 has no Fabric clip, so the code passes; the commit that moves the
    pin of project b to 2.4 changes no Python file and must still be checked, b only."""
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    pinned_project(repo / "a", "2.4.0")  # a finding, committed before: not this commit's
    pinned_project(repo / "b", "1.9.5")
    commit_without_hooks(repo, env, ".")
    pyproject = repo / "b" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("1.9.5", "2.4.0"))

    blocked = commit(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    assert "b/train.py:16:9: ACF001" in blocked.stdout
    assert "a/train.py" not in blocked.stdout
    assert "cannot parse" not in blocked.stdout and "(no files to check)" not in blocked.stdout


def test_a_commit_of_only_requirements_is_fixed_by_the_fixing_hook(
    hook_repo: HookRepo, tmp_path: Path
) -> None:
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix"])
    (repo / "requirements.txt").write_text("lightning==1.9.5\n")
    (repo / "train.py").write_text(TRAIN)
    commit_without_hooks(repo, env, ".")
    (repo / "requirements.txt").write_text("lightning==2.4.0\n")

    fixed = commit(repo, env)
    assert fixed.returncode != 0 and "files were modified by this hook" in fixed.stdout
    assert "clip_gradients_unscaled(fabric, model, optimizer" in (repo / "train.py").read_text()


def test_excluded_staged_files_do_not_block_the_commit(hook_repo: HookRepo, tmp_path: Path) -> None:
    """pre-commit names every staged file: `exclude` must hold for them (--force-exclude)."""
    env = hook_repo.env
    repo = user_repo(tmp_path / "user", hook_repo, ["amp-clipfix-check", "amp-clipfix"])
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n\n[tool.amp-clipfix]\nexclude = ["legacy"]\n'
    )
    (repo / "legacy").mkdir()
    (repo / "legacy" / "train.py").write_text(TRAIN)
    (repo / "train.py").write_text(TRAIN.replace('"16-mixed"', '"32-true"'))

    passed = commit(repo, env)
    assert passed.returncode == 0, passed.stdout
    assert "Failed" not in passed.stdout and "no Python files" not in passed.stdout
    assert (repo / "legacy" / "train.py").read_text() == TRAIN


def test_the_readme_rev_recipe_pins_the_newest_commit(hook_repo: HookRepo, tmp_path: Path) -> None:
    """The README's `rev: main` then `pre-commit autoupdate --freeze`: the hook repository has
    no tags, and the recipe still ends with a fixed revision that runs."""
    env = hook_repo.env
    repo = write_config(tmp_path / "user", hook_repo, ["amp-clipfix-check"])
    config = repo / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace(f"rev: {hook_repo.sha}", "rev: main"))
    updated = pre_commit(repo, env, "autoupdate", "--freeze", "--repo", str(hook_repo.path))
    assert updated.returncode == 0, updated.stdout
    assert f"rev: {hook_repo.sha}" in config.read_text()
    (repo / "train.py").write_text(TRAIN)
    git(repo, env, "add", "--all")
    checked = pre_commit(repo, env, "run", "--all-files")
    assert checked.returncode == 1 and "train.py:16:9: ACF001" in checked.stdout, checked.stdout
