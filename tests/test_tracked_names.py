"""--tracked-only keeps git's index as path names (paths.index_name), not `Path`s: a name is in
it exactly when the file's `Path` would be in the old set of `Path`s, however it is spelled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_fs import git  # git with a fixed author, as that file's commits use

from amp_clipfix.paths import index_name
from amp_clipfix.settings import git_tracked

CLEAN = "import torch\n"


def checkout(root: Path) -> Path:
    """A checkout with two tracked files (one in a package) and an untracked one."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (root / "train.py").write_text(CLEAN, encoding="utf-8")
    (root / "pkg" / "model.py").write_text(CLEAN, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    (root / "scratch.py").write_text(CLEAN, encoding="utf-8")
    return root


def test_every_spelling_of_a_tracked_file_is_in_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = checkout(tmp_path / "repo")
    tracked = git_tracked(root)
    assert tracked is not None
    monkeypatch.chdir(root / "pkg")
    spellings = [
        root / "pkg" / "model.py",
        root / "pkg" / ".." / "pkg" / "model.py",
        Path("model.py"),
        Path("./model.py"),
        Path("../pkg//model.py"),
        f"{root}{os.sep}{os.sep}pkg{os.sep}.{os.sep}model.py",
    ]
    for spelling in spellings:
        assert index_name(spelling) in tracked, spelling
    assert index_name(root / "train.py") in tracked
    assert index_name(root / "scratch.py") not in tracked  # untracked
    assert index_name(root / "pkg") not in tracked  # a folder is no file of the index


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("a/b.py", "a//b.py"),
        ("a/b.py", "./a/./b.py"),
        ("a/b.py", "a/c/../b.py"),
        ("a/b.py", "a/b.py/"),
        ("a/b.py", "a/B.py"),
        ("a/b.py", "b.py"),
    ],
)
def test_names_are_equal_exactly_when_their_paths_are(
    one: str, other: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old index held `Path(os.path.abspath(...))`s: the same answer for every spelling."""
    monkeypatch.chdir(tmp_path)
    as_paths = Path(os.path.abspath(one)) == Path(os.path.abspath(other))
    assert (index_name(one) == index_name(other)) is as_paths


def test_a_tracked_only_check_reads_the_tracked_files_alone(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo")
    command = [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", "--tracked-only"]
    named = ["--", "pkg/model.py"]
    done = subprocess.run([*command, *named], cwd=root, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert b"in 2 files checked" in done.stdout + done.stderr  # not scratch.py
    everything = subprocess.run([*command[:-1], *named], cwd=root, capture_output=True)
    assert b"in 3 files checked" in everything.stdout + everything.stderr
