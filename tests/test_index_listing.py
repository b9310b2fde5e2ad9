"""The hook's command (`check --tracked-only -- FILE`) lists the project root it implies from
git's index alone, and asks git each question once a run.

`--tracked-only` keeps the files git's index holds (settings.ProjectConfigurer._tracked), so
listing the untracked files too (`ls-files --others`, a walk of every folder by git: ~21 ms of
NeMo's hook command against ~4 ms) only fed files that are dropped. Where an untracked file
could still change the outcome (a hard link shares an inode with a tracked file; a walked root
that keeps nothing decides whether its project exists), the full listing is taken
(discover._index_listed). Every case gives the bytes of the full listing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_hostile_fs import git

from amp_clipfix import observed
from amp_clipfix.project import discover as discover_module

TRAIN = """\
import lightning as L
import torch


def main(model):
    fabric = L.Fabric(precision="16-mixed")
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    model, optimizer = fabric.setup(model, optimizer)
    fabric.clip_gradients(model, optimizer, max_norm=1.0)
"""
HOOK = ("--tracked-only", "--force-exclude", "--")


def checkout(root: Path) -> Path:
    """A committed project with a finding in `pkg/train.py`, an untracked module and an
    ignored one."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (root / ".gitignore").write_text("ignored.py\n", encoding="utf-8")
    (root / "pkg" / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "pkg" / "model.py").write_text("import torch\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    (root / "pkg" / "scratch.py").write_text(TRAIN, encoding="utf-8")
    (root / "pkg" / "ignored.py").write_text(TRAIN, encoding="utf-8")
    return root


def hard_link_first(root: Path) -> str:
    """An untracked hard link to the tracked module, named to be walked before it."""
    os.link(root / "pkg" / "train.py", root / "pkg" / "a_copy.py")
    return "pkg/train.py"


def symbolic_link(root: Path) -> str:
    """An untracked link to the tracked module."""
    (root / "pkg" / "a_link.py").symlink_to("train.py")
    return "pkg/train.py"


def untracked_named(root: Path) -> str:
    return "pkg/scratch.py"


def nothing_tracked(root: Path) -> str:
    """Every file walked untracked (the index emptied), the named one excluded."""
    git(root, "rm", "-q", "-r", "--cached", ".")
    with (root / "pyproject.toml").open("a", encoding="utf-8") as config:
        config.write("[tool.amp-clipfix]\nexclude = ['pkg/model.py']\n")
    return "pkg/model.py"


def nested_repository(root: Path) -> str:
    """A repository inside the project, its own files committed there."""
    inner = root / "pkg" / "inner"
    inner.mkdir()
    (inner / "train.py").write_text(TRAIN, encoding="utf-8")
    git(inner, "init", "-q")
    git(inner, "add", ".")
    git(inner, "commit", "-q", "-m", "inner")
    return "pkg/train.py"


def staged_edit(root: Path) -> str:
    with (root / "pkg" / "train.py").open("a", encoding="utf-8") as module:
        module.write("_edited = 1\n")
    git(root, "add", "pkg/train.py")
    return "pkg/train.py"


LAYOUTS: dict[str, Callable[[Path], str]] = {
    "staged edit": staged_edit,
    "untracked hard link first": hard_link_first,
    "untracked symbolic link": symbolic_link,
    "untracked named file": untracked_named,
    "nothing tracked": nothing_tracked,
    "nested repository": nested_repository,
}


def git_questions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...]]]:
    """Each git command the run starts, with its folder."""
    asked: list[tuple[str, tuple[str, ...]]] = []
    run_git = observed._run_git

    def spy(arguments: list[str], folder: str | os.PathLike[str]) -> bytes | None:
        asked.append((os.fspath(folder), tuple(arguments)))
        return run_git(arguments, folder)

    monkeypatch.setattr(observed, "_run_git", spy)
    return asked


def test_the_hook_command_lists_the_index_and_asks_git_each_question_once(
    cached_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run with the cache: it writes the analysis cache and the replay's record,
    each of which asks whether the checkout tracks the cache's folder."""
    root = checkout(cached_root)
    named = staged_edit(root)
    asked = git_questions(monkeypatch)
    run = amp_clipfix(root, "check", *HOOK, named)
    assert run.code == 1, run.stderr
    assert b"pkg/train.py:" in run.stdout
    assert (root / ".amp_clipfix_cache").is_dir()
    assert not [arguments for _, arguments in asked if "--others" in arguments]
    assert [arguments for _, arguments in asked if ".amp_clipfix_cache" in arguments]
    assert len(asked) == len(set(asked)), asked  # the index once, the cache's folder once


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
@pytest.mark.parametrize("command", ["check", "apply"])
def test_the_index_listing_gives_the_full_listing_s_bytes(
    layout: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = checkout(tmp_path / "repo")
    named = LAYOUTS[layout](root)
    arguments = (command, "--no-cache", "--format", "json", *HOOK, named)
    if command == "apply":
        arguments = ("apply", "--dry-run", "--no-cache", *HOOK, named)
    twin = tmp_path / "twin"
    shutil.copytree(root, twin, symlinks=True)
    if layout == "untracked hard link first":  # copytree copies the link's bytes apart
        (twin / "pkg" / "a_copy.py").unlink()
        os.link(twin / "pkg" / "train.py", twin / "pkg" / "a_copy.py")
    asked = git_questions(monkeypatch)
    listed = amp_clipfix(root, *arguments)
    by_index = not any("--others" in arguments for _, arguments in asked)
    monkeypatch.setattr(discover_module, "_index_listed", lambda *_: False)  # the full listing
    full = amp_clipfix(twin, *arguments)
    assert (listed.code, listed.stdout, listed.stderr) == (full.code, full.stdout, full.stderr)
    # the layouts where an untracked file may change the outcome take the full listing
    falls_back = layout in ("untracked hard link first", "nothing tracked")
    assert by_index is not falls_back


def test_the_index_listing_is_taken_only_where_no_untracked_file_can_matter() -> None:
    found = discover_module._Found(Path("/r/a.py"), Path("/r"), False)
    walked = [(Path("/r"), [found])]
    assert discover_module._index_listed(False, walked, [[found]])
    assert not discover_module._index_listed(True, walked, [[found]])  # a hard-linked file
    assert not discover_module._index_listed(False, walked, [[]])  # the root kept nothing
    assert discover_module._index_listed(False, [(Path("/r"), [])], [[]])  # nothing walked


def test_a_named_folder_is_listed_with_its_untracked_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an implied root is listed from the index: a named folder's notes say what git
    ignores, which the index cannot tell."""
    root = checkout(tmp_path / "repo")
    asked = git_questions(monkeypatch)
    run = amp_clipfix(root, "check", "--no-cache", "--tracked-only", "pkg")
    assert run.code == 1, run.stderr
    assert [arguments for _, arguments in asked if "--others" in arguments]
