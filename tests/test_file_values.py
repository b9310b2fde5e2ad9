"""Tests of a project's per-file cache values kept together in one entry (analysis/file_values.py,
branch `unread8`): a collected file's sites and a notebook's code text are taken from the
project's entry when the file has the bytes stored there, so a warm run loads one entry instead
of one per file. A stale value is never used: edits, reverts, renames, removed files, an entry
of another shape, a value of another file; from the command line, every kind of change gives a
cold run's bytes."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from spied import arguments_at
from test_file_tests import edited
from test_incremental import EDITS, MODULE, project, same_as_cold, write  # noqa: F401 - a fixture

from amp_clipfix.analysis import per_file_entry
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.models import FileSites

TEXTS = [b"a", b"b", b"fused", b"", b"x = 1\n"]


def cache_of(root: Path, monkeypatch: pytest.MonkeyPatch) -> Cache:
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "user-cache"))
    root.mkdir(exist_ok=True)
    return Cache(root)


def value_of(path: Path, data: bytes) -> FileSites:
    """A file's value, a function of its path and bytes (as its sites are)."""
    return FileSites(path, has_guard_helper=b"fused" in data, candidates=())


def run(root: Path, contents: dict[Path, bytes], monkeypatch: pytest.MonkeyPatch) -> int:
    """One run asking every file's value through `Cache.get` (computed and `put` on a miss, as
    the collection does), checked against the value itself, then saved as a run saves: how many
    values came from the files' own entries or were computed."""
    cache = cache_of(root, monkeypatch)
    for path, data in contents.items():
        found = cache.get(path, data)
        if found is None:
            found = value_of(path, data)
            cache.put(path, data, found)
        assert found == value_of(path, data)
    elsewhere = cache.values("sites").misses
    cache.save_per_file()
    return elsewhere


def test_random_changes_take_from_elsewhere_only_the_files_not_stored_with_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits, reverts, renames, files added and removed: each value is the file's own; only the
    files whose path and bytes the project's entry does not hold are taken elsewhere (a file
    or two again each run until three are: then the entry is written with this run's files)."""
    generator = random.Random(31)
    root = tmp_path / "project"
    contents = {root / f"m{i}.py": generator.choice(TEXTS) for i in range(12)}
    assert run(root, contents, monkeypatch) == 12
    stored = dict(contents)
    kinds = ["edit", "revert", "rename", "added", "removed"]
    for now in edited(generator, contents, 120, kinds, TEXTS):
        expected = sum(stored.get(path) != data for path, data in now.items())
        assert run(root, now, monkeypatch) == expected
        if expected >= per_file_entry.STORED_AFTER:
            stored = dict(now)  # the files this run asked: the others dropped out


def test_a_warm_run_loads_the_project_entry_instead_of_each_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    contents = {root / f"m{i}.py": f"x = {i}\n".encode() for i in range(20)}
    run(root, contents, monkeypatch)
    loaded: list[str] = arguments_at(monkeypatch, Cache, "load", 1)
    contents[root / "m3.py"] = b"x = 'edited'\n"
    assert run(root, contents, monkeypatch) == 1
    cache = cache_of(root, monkeypatch)
    own = {cache.key(path, data) for path, data in contents.items()}
    assert loaded.count(cache.project_entry("values", "sites")) == 1
    assert [key for key in loaded if key in own] == [
        cache.key(root / "m3.py", contents[root / "m3.py"])
    ]


@pytest.mark.parametrize("shape", ["a list", "not a pair", "another digest", "another file"])
def test_an_entry_that_does_not_hold_the_value_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """Another shape, a value without a digest, another file's bytes, another file's sites
    under this name: each file's value is its own (its own entry, or computed)."""
    root = tmp_path / "project"
    contents = {root / f"{name}.py": name.encode() for name in "abcd"}
    run(root, contents, monkeypatch)
    cache = cache_of(root, monkeypatch)
    key = cache.values("sites").key
    digest = cache.digest
    stored: object = {
        "a list": [1, 2],
        "not a pair": {str(path): value_of(path, data) for path, data in contents.items()},
        "another digest": {
            str(path): (digest(b"other"), value_of(path, b"fused")) for path in contents
        },
        "another file": {
            str(path): (digest(data), value_of(root / "elsewhere.py", data))
            for path, data in contents.items()
        },
    }[shape]
    cache.store(key, stored)
    for path in contents:  # no file's own entry either: only a right value can be taken
        (
            cache.folder / cache.key(path, contents[path])[-2:] / cache.key(path, contents[path])
        ).unlink()
    assert run(root, contents, monkeypatch) == 4


def test_a_text_is_taken_from_the_project_entry_and_computed_when_it_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    cache = cache_of(root, monkeypatch)
    path = root / "a.ipynb"
    assert cache.text("searchable", path, b"{}", lambda: b"code") == b"code"
    for name in "bcd":
        cache.text("searchable", root / f"{name}.ipynb", b"{}", lambda: b"more")
    cache.save_per_file()
    again = cache_of(root, monkeypatch)

    def never() -> bytes:
        raise AssertionError("computed again")

    assert again.text("searchable", path, b"{}", never) == b"code"
    assert again.values("searchable").misses == 0

    def boom() -> bytes:
        raise ValueError("a bug of ours")

    with pytest.raises(ValueError):
        again.text("searchable", path, b"{ }", boom)
    kept = again.values("searchable").now[str(path)]
    assert kept == (again.digest(b"{}"), b"code")  # nothing noted for the bytes that raised


NOTEBOOK_CELLS = [
    "import torch\nimport lightning as L\n",
    "opt = torch.optim.AdamW([], fused=True)\n",
    "L.Fabric(precision='16-mixed').clip_gradients(None, opt, max_norm=1.0)\n",
]


def notebook(cells: list[str]) -> str:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": text,
                    "outputs": [],
                    "execution_count": None,
                }
                for text in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def test_every_kind_of_change_gives_a_cold_runs_bytes_with_the_values_together(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The edits of test_incremental, then a notebook added, edited and renamed, a module made
    a link and its mode changed, a file whose bytes change under the same size: each warm run
    (the values taken from the project's entries) prints what a cold run prints, and after
    an edit to a file no stage passes no file's own sites entry is loaded."""
    for i in range(6):
        write(project, f"pkg/other_{i}.py", MODULE.format(fused="False").replace("Module", f"M{i}"))
    for name in ("nb", "nb_1", "nb_2"):  # three: the cold run stores their texts together
        write(project, f"{name}.ipynb", notebook(NOTEBOOK_CELLS))
    seen = {same_as_cold(project)}
    loaded: list[str] = arguments_at(monkeypatch, Cache, "load", 1)
    write(project, "pkg/helper_0.py", "def helper_0(x):\n    return x - 1\n")
    seen.add(same_as_cold(project))
    own = [key for key in loaded if len(key) == 64 or key.startswith("searchable-")]
    assert own == [] and any(key.startswith("values-") for key in loaded), loaded
    for edit in EDITS.values():
        edit(project)
        seen.add(same_as_cold(project))
    changes = [
        lambda: write(project, "nb.ipynb", notebook([*NOTEBOOK_CELLS[:1], "opt = 1\n"])),
        lambda: write(project, "nb.ipynb", notebook(NOTEBOOK_CELLS)),
        lambda: (project / "nb.ipynb").rename(project / "renamed.ipynb"),
        lambda: (project / "pkg" / "other_1.py").unlink(),
        lambda: (project / "pkg" / "other_1.py").symlink_to(project / "pkg" / "other_2.py"),
        lambda: os.chmod(project / "pkg" / "other_2.py", 0o600),
        lambda: write(
            project, "pkg/other_3.py", MODULE.format(fused="True").replace("Module", "M3")
        ),
        lambda: write(  # the same size, other bytes
            project, "pkg/other_3.py", MODULE.format(fused="Fals").replace("Module", "M3")
        ),
    ]
    for change in changes:
        change()
        seen.add(same_as_cold(project))
    assert len(seen) >= 6  # the changes changed the report
