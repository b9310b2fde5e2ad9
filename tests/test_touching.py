"""Which findings a partial run (`check FILE`, the pre-commit hook's command) keeps: those with
a site in a named file or under a named folder, links counted as what they name
(settings.Touching). Each named path's real path is asked once a run, each site's file decided
once; a site's file is not resolved when every named path is another file."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from spied import first_arguments

from amp_clipfix import observed
from amp_clipfix.settings import Touching


def finding(*paths: Path) -> object:
    return SimpleNamespace(sites=[SimpleNamespace(path=path) for path in paths])


def per_finding(only: tuple[Path, ...], found: object) -> bool:
    """The answer asked afresh for one finding (Scope.touches before Touching)."""
    named = {*only, *(Path(os.path.realpath(path)) for path in only)}
    for site in found.sites:  # type: ignore[attr-defined]
        for path in {Path(os.path.abspath(site.path)), Path(os.path.realpath(site.path))}:
            if path in named or any(folder in named for folder in path.parents):
                return True
    return False


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/a.py", "pkg/b.py", "pkg/sub/c.py", "d.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "pkg" / "a.py")
    (tmp_path / "folder_link").symlink_to(tmp_path / "pkg" / "sub", target_is_directory=True)
    os.link(tmp_path / "pkg" / "a.py", tmp_path / "hard.py")
    return tmp_path


def test_each_path_is_resolved_once_over_many_findings(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = first_arguments(monkeypatch, observed, "realpath")
    a, b, d = tree / "pkg" / "a.py", tree / "pkg" / "b.py", tree / "d.py"
    touches = Touching((a,))
    answers = [touches(finding(b, a if n % 2 else d)) for n in range(50)]
    assert answers == [n % 2 == 1 for n in range(50)]
    # named once; the named file itself is found by its name: no site's file is resolved
    assert sorted(map(os.fspath, asked)) == [str(a)]


def test_a_file_other_than_every_named_file_is_not_resolved(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every named path is a file, a site's file with another device and inode cannot
    have a named real path: its real path is not asked (a `stat` instead of a `lstat` per part
    of the path). A link to the named file (the same inode) is still resolved."""
    asked = first_arguments(monkeypatch, observed, "realpath")
    a, b, c = tree / "pkg" / "a.py", tree / "pkg" / "b.py", tree / "pkg" / "sub" / "c.py"
    touches = Touching((a,))
    assert [touches(finding(path)) for path in (b, c, tree / "d.py")] == [False] * 3
    assert touches(finding(tree / "link.py")) is True
    assert sorted(map(os.fspath, asked)) == sorted(map(str, (a, tree / "link.py")))
    folder = Touching((tree / "pkg",))  # a folder: every site's file is resolved
    assert folder(finding(b)) is True and folder(finding(tree / "d.py")) is False
    assert {os.fspath(path) for path in asked} >= {str(tree / "d.py")}


@pytest.mark.parametrize(
    ("named", "sites", "kept"),
    [
        (("pkg/a.py",), ("pkg/a.py",), True),
        (("pkg/a.py",), ("pkg/b.py", "d.py"), False),
        (("pkg",), ("pkg/sub/c.py",), True),
        (("pkg/sub",), ("pkg/a.py",), False),
        (("link.py",), ("pkg/a.py",), True),  # a named link is the file it leads to
        (("pkg/a.py",), ("link.py",), True),
        (("folder_link",), ("pkg/sub/c.py",), True),
        (("pkg/sub/c.py",), ("folder_link/c.py",), True),
        (("d.py", "pkg/b.py"), ("pkg/sub/c.py", "pkg/b.py"), True),
        (("d.py",), (), False),
        (("pkg/a.py",), ("hard.py",), False),  # a hard link: the same inode, another path
        (("hard.py",), ("pkg/a.py", "link.py"), False),
        (("pkg/a.py", "pkg"), ("pkg/sub/c.py",), True),  # a file and a folder named
        (("pkg/a.py", "gone.py"), ("pkg/b.py",), False),  # a named path that is no file
        (("pkg/a.py",), ("gone.py",), False),  # a site's file that is gone
        (("folder_link/c.py",), ("pkg/sub/c.py",), True),
    ],
)
def test_the_findings_kept_are_those_a_fresh_answer_keeps(
    tree: Path, named: tuple[str, ...], sites: tuple[str, ...], kept: bool
) -> None:
    only = tuple(Path(os.path.abspath(tree / name)) for name in named)
    touches = Touching(only)
    found = finding(*(tree / site for site in sites))
    other = finding(tree / "d.py")
    for _ in range(2):  # asked again: the same answers
        assert touches(found) is kept
        assert per_finding(only, found) is kept
        assert touches(other) is per_finding(only, other)


def test_without_named_paths_every_finding_is_kept(tree: Path) -> None:
    assert Touching(None)(finding(tree / "d.py")) is True
    assert Touching(None)(finding()) is True
