"""The names `--tracked-only` compares (paths.index_names, paths.path_index_name, branch
`unread8`): git's listing and the project's files named as `index_name` names them, without
normalising again a name that is plain already (no empty, `.` or `..` part), as discover takes
git's listing (paths.is_plain). Random names, roots and `Path`s give `index_name`'s answer;
plain ones never call it."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from amp_clipfix import paths
from amp_clipfix.paths import index_name, index_names, path_index_name

PARTS = ["a", "b.py", ".", "..", "", ".git", "..x", "x..", ".hidden", "a b", "é"]
ROOTS = ["/tmp/r", "/tmp/r/", "/", "//tmp/r", "/tmp/./r", "/tmp/x/../r", "/tmp//r", "relative/r"]


def random_name(generator: random.Random) -> str:
    name = "/".join(generator.choice(PARTS) for _ in range(generator.randrange(1, 5)))
    return ("/" + name) if generator.random() < 0.05 else name


def test_random_names_get_index_names_answer() -> None:
    generator = random.Random(8)
    for root in ROOTS:
        names = [random_name(generator) for _ in range(400)]
        expected = [index_name(os.path.join(root, name)) for name in names]
        assert list(index_names(root, names)) == expected


def test_random_paths_get_index_names_answer() -> None:
    generator = random.Random(31)
    for _ in range(2000):
        text = generator.choice(ROOTS) + "/" + random_name(generator)
        path = Path(text)
        assert path_index_name(path) == index_name(path), text


@pytest.mark.skipif(not paths.PLAIN_NAMES, reason="POSIX names only")
def test_plain_names_are_not_normalised_again(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []

    def spied(path: str | os.PathLike[str]) -> str:
        called.append(os.fspath(path))
        return index_name(path)

    monkeypatch.setattr(paths, "index_name", spied)
    names = ["a.py", "pkg/b.py", ".github/x.yml", "..x/y.py"]
    assert list(paths.index_names("/tmp/r", names)) == [f"/tmp/r/{name}" for name in names]
    assert called == ["/tmp/r"]  # the folder, once
    assert paths.path_index_name(Path("/tmp/r/pkg/b.py")) == "/tmp/r/pkg/b.py"
    assert called == ["/tmp/r"]
    assert list(paths.index_names("/tmp/r", ["a/../b.py"])) == ["/tmp/r/b.py"]
    assert paths.path_index_name(Path("/tmp/r/../b.py")) == "/tmp/b.py"
    assert called == ["/tmp/r", "/tmp/r", "/tmp/r/a/../b.py", "/tmp/r/../b.py"]


def test_a_plain_name_is_left_as_it_is_by_normpath() -> None:
    """What discover's git listing takes as it is (`is_plain`) normpath would not change."""
    generator = random.Random(35)
    plain = 0
    for _ in range(5000):
        name = random_name(generator) + ("/" if generator.random() < 0.05 else "")
        if paths.is_plain(name):
            plain += 1
            assert os.path.normpath(name) == name, name
    assert plain > 500 or not paths.PLAIN_NAMES
