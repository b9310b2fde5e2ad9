"""Which findings a partial run (`check FILE`, the pre-commit hook's command) keeps: those with
a site in a named file or under a named folder, links counted as what they name
(settings.Touching). Each named path's and each site file's real path is asked once a run,
not once per finding and site."""

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
    return tmp_path


def test_each_path_is_resolved_once_over_many_findings(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = first_arguments(monkeypatch, observed, "realpath")
    a, b, d = tree / "pkg" / "a.py", tree / "pkg" / "b.py", tree / "d.py"
    touches = Touching((a,))
    answers = [touches(finding(b, a if n % 2 else d)) for n in range(50)]
    assert answers == [n % 2 == 1 for n in range(50)]
    assert sorted(map(os.fspath, asked)) == sorted(
        map(str, (a, b, d, a))
    )  # named once; each site's file once


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
