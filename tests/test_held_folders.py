"""The cache reads its entries through the folder of their shards held open across a run's
reads (cache_layout.Entries.to_read, cache_folders.HeldFolder): one open of the chain from the
project's root, not one per entry, and never a read through a link or out of that folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amp_clipfix.analysis.cache import Cache
from amp_clipfix.cache_folders import HeldFolder, open_folder
from amp_clipfix.cache_layout import CACHE_DIR, Entries, version_folder

needs_folder_fds = pytest.mark.skipif(
    not (os.open in os.supports_dir_fd and os.scandir in os.supports_fd),
    reason="folders are opened by path here (no dir_fd)",
)


def key(number: int) -> str:
    """A query entry's name; the last two digits pick its shard: a new shard each."""
    return f"query-{number:064x}"


def filled(root: Path, count: int) -> list[str]:
    cache = Cache(root)
    keys = [key(number) for number in range(count)]
    for name in keys:
        cache.store(name, {"entry": name})
    return keys


@needs_folder_fds
def test_a_run_opens_the_project_root_once_for_all_its_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = filled(tmp_path, 20)
    assert len({name[-2:] for name in keys}) == 20  # twenty shards
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, *arguments: object, **options: object) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *arguments, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    cache = Cache(tmp_path)
    assert [cache.load(name) for name in keys] == [{"entry": name} for name in keys]
    assert opened.count(os.fspath(tmp_path)) == 1
    assert opened.count(CACHE_DIR) == 1
    assert sorted(name for name in opened if len(name) == 2) == sorted(n[-2:] for n in keys)


@needs_folder_fds
@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../v"])
def test_a_shard_name_that_is_no_single_folder_is_never_opened(tmp_path: Path, name: str) -> None:
    (tmp_path / "held" / "a" / "b").mkdir(parents=True)
    opened = open_folder(tmp_path, ["held"])
    assert opened is not None and opened.fd is not None
    held = HeldFolder(opened.fd, opened.path)
    assert held.child(name) is None
    child = held.child("a")
    assert child is not None and child.path == os.path.join(opened.path, "a")
    with child:
        assert child.names() == ["b"]


@needs_folder_fds
def test_a_shard_swapped_for_a_link_is_not_read(tmp_path: Path) -> None:
    keys = filled(tmp_path, 2)
    cache = Cache(tmp_path)
    assert cache.load(keys[0]) == {"entry": keys[0]}  # the shards' folder is held now
    shard = Path(version_folder(tmp_path), keys[1][-2:])
    elsewhere = tmp_path / "elsewhere"
    shard.rename(elsewhere)
    shard.symlink_to(elsewhere, target_is_directory=True)
    assert cache.load(keys[1]) is None
    assert Cache(tmp_path).load(keys[1]) is None


@needs_folder_fds
def test_a_folder_swapped_for_a_link_after_it_is_held_redirects_nothing(tmp_path: Path) -> None:
    """The link leads to a copy holding another value under the same name: never read."""
    keys = filled(tmp_path, 2)
    cache = Cache(tmp_path)
    assert cache.load(keys[0]) == {"entry": keys[0]}
    version = Path(version_folder(tmp_path))
    Cache(tmp_path).store(keys[1], "another value")  # written into the real folder
    (tmp_path / "other").mkdir()
    Cache(tmp_path / "other").store(keys[1], "forged value")  # sealed by this user too
    version.rename(tmp_path / "moved")
    version.symlink_to(Path(version_folder(tmp_path / "other")), target_is_directory=True)
    assert cache.load(keys[1]) == "another value"  # the held folder, moved as it is
    assert Cache(tmp_path).load(keys[1]) is None  # a new run: a link on the way, a miss


def test_an_entry_written_after_a_miss_is_read(tmp_path: Path) -> None:
    """No cache folder when first asked: a write makes it, and a later read finds it."""
    cache = Cache(tmp_path)
    assert cache.load(key(1)) is None
    cache.store(key(1), [1, 2])
    assert cache.load(key(1)) == [1, 2]
    assert cache.load(key(2)) is None
    cache.store(key(2), "two")
    assert cache.load(key(2)) == "two"


@needs_folder_fds
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd to count")
def test_the_held_folder_is_closed_when_the_cache_is_dropped(tmp_path: Path) -> None:
    keys = filled(tmp_path, 3)
    before = len(os.listdir("/proc/self/fd"))
    cache = Cache(tmp_path)
    assert cache.load(keys[0]) == {"entry": keys[0]}
    assert len(os.listdir("/proc/self/fd")) == before + 1
    del cache
    assert len(os.listdir("/proc/self/fd")) == before


def test_entries_outside_the_cache_folder_are_not_read(tmp_path: Path) -> None:
    keys = filled(tmp_path, 1)
    entries = Entries(tmp_path)
    shard = os.path.join(version_folder(tmp_path), keys[0][-2:])
    assert entries.read(shard, keys[0]) is not None
    assert entries.read(os.fspath(tmp_path), keys[0]) is None
