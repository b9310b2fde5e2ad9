"""discover() must group files by project, honour excludes, and never hang or stop on a bad path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from amp_clipfix import observed
from amp_clipfix.models import ErrorKind, FileError
from amp_clipfix.project.discover import (
    DEFAULT_EXCLUDES,
    PROJECT_MARKERS,
    Discovery,
    Project,
    discover,
    find_project_root,
)


def touch(path: Path, data: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    return path


def make_project(folder: Path, marker: str = "pyproject.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if marker == ".git":
        (folder / ".git").mkdir()
    else:
        touch(folder / marker, "")
    return folder


def only_project(discovery: Discovery) -> Project:
    assert discovery.errors == ()
    (project,) = discovery.projects
    return project


def relative_names(project: Project) -> list[str]:
    return [path.relative_to(project.root).as_posix() for path in project.files]


@pytest.mark.parametrize("marker", PROJECT_MARKERS)
def test_root_found_by_each_marker(tmp_path: Path, marker: str) -> None:
    root = make_project(tmp_path / "proj", marker)
    module = touch(root / "pkg" / "deep" / "module.py")

    assert find_project_root(module) == root
    assert find_project_root(module.parent) == root
    assert find_project_root(root) == root


def test_nearest_marker_wins(tmp_path: Path) -> None:
    outer = make_project(tmp_path / "outer", ".git")
    inner = make_project(outer / "packages" / "inner")
    module = touch(inner / "src" / "a.py")

    assert find_project_root(module) == inner
    assert find_project_root(outer / "packages") == outer


def test_no_marker_gives_the_path_itself(tmp_path: Path) -> None:
    # tmp_path has no markers above it in a normal test run.
    folder = tmp_path / "loose"
    module = touch(folder / "a.py")

    assert find_project_root(folder) == folder
    assert find_project_root(module) == folder


def test_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "pkg" / "a.py")
    monkeypatch.chdir(root / "pkg")

    assert find_project_root(Path("a.py")) == root
    assert find_project_root(Path("..")) == root


def test_walk_finds_python_files_sorted_and_absolute(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "b.py")
    touch(root / "a.py")
    touch(root / "pkg" / "z.py")
    touch(root / "pkg" / "notes.txt")
    touch(root / "pkg" / "script")

    project = only_project(discover([root]))

    assert project.root == root
    assert relative_names(project) == ["a.py", "b.py", "pkg/z.py"]
    assert all(path.is_absolute() for path in project.files)


def test_two_paths_in_one_project_merge(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    first = touch(root / "one" / "a.py")
    touch(root / "two" / "b.py")

    project = only_project(discover([root / "two", first]))

    assert relative_names(project) == ["one/a.py", "two/b.py"]


def test_two_projects_stay_separate_and_sorted(tmp_path: Path) -> None:
    beta = make_project(tmp_path / "beta", "setup.py")
    alpha = make_project(tmp_path / "alpha", "setup.cfg")
    touch(beta / "b.py")
    touch(alpha / "a.py")

    discovery = discover([beta, alpha])

    assert discovery.errors == ()
    assert [project.root for project in discovery.projects] == [alpha, beta]
    # setup.py is Python too, so it is one of the project's files.
    names = [relative_names(project) for project in discovery.projects]
    assert names == [["a.py"], ["b.py", "setup.py"]]


def test_default_excludes_are_skipped(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "keep.py")
    for name in DEFAULT_EXCLUDES:
        touch(root / name / "skipped.py")
    touch(root / "pkg" / "__pycache__" / "skipped.py")

    project = only_project(discover([root]))

    assert relative_names(project) == ["keep.py"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("tests/*", ["legacy/old.py", "pkg/api_pb2.py", "pkg/core.py"]),
        ("*_pb2.py", ["legacy/old.py", "pkg/core.py", "tests/test_core.py"]),
        ("legacy", ["pkg/api_pb2.py", "pkg/core.py", "tests/test_core.py"]),
        ("legacy/", ["pkg/api_pb2.py", "pkg/core.py", "tests/test_core.py"]),
        ("pkg/core.py", ["legacy/old.py", "pkg/api_pb2.py", "tests/test_core.py"]),
    ],
)
def test_exclude_globs(tmp_path: Path, pattern: str, expected: list[str]) -> None:
    root = make_project(tmp_path / "proj")
    for name in ["pkg/core.py", "pkg/api_pb2.py", "tests/test_core.py", "legacy/old.py"]:
        touch(root / name)

    project = only_project(discover([root], exclude=[pattern]))

    assert relative_names(project) == expected


def test_exclude_is_relative_to_project_root_not_to_the_walked_folder(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "src" / "gen" / "a.py")
    touch(root / "src" / "b.py")

    project = only_project(discover([root / "src"], exclude=["src/gen"]))

    assert relative_names(project) == ["src/b.py"]


def test_explicit_file_is_always_included(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    excluded = touch(root / "build" / "gen_pb2.py")
    script = touch(root / "bin" / "run-training")

    project = only_project(discover([excluded, script], exclude=["*_pb2.py", "bin"]))

    assert project.files == tuple(sorted([excluded, script]))


def test_symlink_loop_does_not_hang(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "pkg" / "a.py")
    (root / "pkg" / "loop").symlink_to(root, target_is_directory=True)
    (root / "self").symlink_to(root / "self")  # a link to itself

    project = only_project(discover([root]))

    assert relative_names(project) == ["pkg/a.py"]


def test_symlinked_folder_is_not_followed(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    outside = touch(tmp_path / "elsewhere" / "outside.py")
    (root / "linked").symlink_to(outside.parent, target_is_directory=True)
    touch(root / "a.py")

    project = only_project(discover([root]))

    assert relative_names(project) == ["a.py"]


def test_symlinked_file_only_when_target_is_inside_the_project(tmp_path: Path) -> None:
    """A link inside is listed as the file it leads to: that is the file a fix writes."""
    root = make_project(tmp_path / "proj")
    inside = touch(root / "real" / "inside.py")
    outside = touch(tmp_path / "elsewhere" / "outside.py")
    (root / "links").mkdir()
    (root / "links" / "in.py").symlink_to(inside)
    (root / "links" / "out.py").symlink_to(outside)

    project = only_project(discover([root / "links"]))

    assert relative_names(project) == ["real/inside.py"]


def test_symlink_and_target_are_listed_once_keeping_the_plain_path(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    target = touch(root / "z_target.py")
    (root / "a_link.py").symlink_to(target)

    project = only_project(discover([root]))

    assert project.files == (target,)


def test_same_file_reached_twice_is_listed_once(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    module = touch(root / "pkg" / "a.py")

    project = only_project(discover([root, module, root / "pkg", root / "pkg" / ".." / "pkg"]))

    assert project.files == (module,)


def test_missing_path_is_an_error_and_others_still_work(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    module = touch(root / "a.py")
    missing = Path("missing/path")

    discovery = discover([missing, root])

    assert discovery.errors == (FileError(missing, "no such file or directory", ErrorKind.PATH),)
    (project,) = discovery.projects
    assert project.files == (module,)


def test_broken_symlink_argument_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.symlink_to(tmp_path / "gone.py")

    discovery = discover([broken])

    assert discovery.errors == (FileError(broken, "broken symbolic link", ErrorKind.PATH),)
    assert discovery.projects == ()


def test_folder_without_python_files_yields_no_files(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    touch(root / "README.md")

    discovery = discover([root])

    assert discovery.errors == ()
    assert [path for project in discovery.projects for path in project.files] == []


def test_unreadable_subfolder_is_an_error_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import amp_clipfix.project.discover as discover_module

    root = make_project(tmp_path / "proj")
    touch(root / "a.py")
    locked = root / "locked"
    touch(locked / "b.py")
    real_scandir = discover_module.os.scandir

    def scandir(path: object) -> Iterator[os.DirEntry[str]]:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discover_module.os, "scandir", scandir)

    discovery = discover([root])

    assert discovery.errors == (
        FileError(locked, "cannot read folder: Permission denied", ErrorKind.READ),
    )
    assert relative_names(discovery.projects[0]) == ["a.py"]


def test_deep_tree_is_walked_without_recursion(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    folder = root
    for _ in range(150):
        folder = folder / "d"
    touch(folder / "deep.py")

    project = only_project(discover([root]))

    assert len(project.files) == 1


def test_gitignore_is_honoured_in_a_git_checkout_nested_ones_too(tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for name in ("keep.py", "build_out/skip.py", "sub/keep.py", "sub/gen/skip.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("build_out/\n")
    (tmp_path / "sub" / ".gitignore").write_text("gen/\n")
    walked = discover([tmp_path])
    names = sorted(p.relative_to(tmp_path).as_posix() for p in walked.projects[0].files)
    assert names == ["keep.py", "sub/keep.py"]
    explicit = discover([tmp_path / "sub" / "gen" / "skip.py"])
    assert [p.name for p in explicit.projects[0].files] == ["skip.py"]


def test_folders_of_one_checkout_ask_git_once_and_each_keeps_its_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for name in ("src/keep.py", "src/gen/skip.py", "tests/keep.py", "tests/[x]*/keep.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("gen/\n")
    calls: list[list[str]] = []
    real_git = observed.git

    def git(arguments: list[str], folder: Path) -> bytes | None:
        calls.append(arguments)
        return real_git(arguments, folder)

    monkeypatch.setattr(observed, "git", git)
    walked = discover([tmp_path / "src", tmp_path / "tests", tmp_path / "tests" / "[x]*"])
    names = sorted(p.relative_to(tmp_path).as_posix() for p in walked.projects[0].files)
    assert names == ["src/keep.py", "tests/[x]*/keep.py", "tests/keep.py"]
    assert len(calls) == 1
