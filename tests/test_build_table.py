"""The build fingerprint's table of the package's files (cache_layout.sources_digest, branch
`fixed9`): a cached run whose package files all have the settled status the table noted takes
the noted digest instead of reading and hashing them; any other package (a file edited, added,
removed, renamed, made a link, a folder added) is hashed and gives the digest a run without the
table gives; files changed within the settle window are never noted; a table this user's secret
did not seal, or of another package folder, is not used."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from amp_clipfix import cache_layout
from amp_clipfix.cache_layout import seal, secret, sources_digest

LATER = 60_000_000_000  # a run's start a minute from now: every file written so far is settled

FILES = {
    "__init__.py": "__version__ = '1'\n",
    "cli.py": "def main():\n    return 0\n",
    "data.json": '{"a": 1}\n',
    "rules/__init__.py": "",
    "rules/one.py": "CODE = 'X1'\n",
    "__pycache__/cli.py": "not part of the build\n",
    "README.md": "not part of the build\n",
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package folder, and a user cache folder with this user's secret beside it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(cache_layout, "_secrets", {})
    folder = tmp_path / "site" / "pkg"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    assert secret(tmp_path / "elsewhere", create=True) is not None
    return folder


def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The package files each later digest reads."""
    read: list[str] = []
    source_bytes = cache_layout._source_bytes

    def spied(path: str, noted: object) -> tuple[bytes, bool]:
        read.append(os.path.basename(path))
        return source_bytes(path, noted)  # type: ignore[arg-type]

    monkeypatch.setattr(cache_layout, "_source_bytes", spied)
    return read


def cold(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The digest of a run without a table: no secret, so nothing noted or taken."""
    with monkeypatch.context() as patched:
        patched.setenv("XDG_CACHE_HOME", str(folder.parent / "no-user-cache"))
        patched.setattr(cache_layout, "_secrets", {})
        return sources_digest(str(folder), time.time_ns() + LATER)


def test_a_settled_package_is_read_once(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = reads(monkeypatch)
    first = sources_digest(str(package), time.time_ns() + LATER)
    assert sorted(read) == ["__init__.py", "__init__.py", "cli.py", "data.json", "one.py"]
    read.clear()
    assert sources_digest(str(package), time.time_ns() + LATER) == first
    assert read == []  # every file again on 0938ed9c: its fingerprint hashed them each run
    assert cold(package, monkeypatch) == first


CHANGES: dict[str, Callable[[Path], object]] = {
    "edited": lambda p: (p / "cli.py").write_text("def main():\n    return 1  # edited\n"),
    "added": lambda p: (p / "new.py").write_text("X = 1\n"),
    "removed": lambda p: (p / "rules" / "one.py").unlink(),
    "renamed": lambda p: (p / "rules" / "one.py").rename(p / "rules" / "two.py"),
    "a link": lambda p: ((p / "cli.py").unlink(), (p / "cli.py").symlink_to(p / "rules/one.py")),
    "a folder": lambda p: shutil.copytree(p / "rules", p / "more"),
    "data": lambda p: (p / "data.json").write_text('{"a": 2, "b": 3}\n'),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_package_is_hashed_as_without_the_table(
    package: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    before = sources_digest(str(package), time.time_ns() + LATER)
    CHANGES[change](package)
    read = reads(monkeypatch)
    after = sources_digest(str(package), time.time_ns() + LATER)
    assert after != before and read  # hashed
    assert after == cold(package, monkeypatch)
    read.clear()
    assert sources_digest(str(package), time.time_ns() + LATER) == after and read == []


def test_files_changed_within_the_settle_window_are_not_noted(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written just now: a later write could keep the status (the same clock tick), so the
    table is not written and every run reads the files."""
    read = reads(monkeypatch)
    first = sources_digest(str(package), time.time_ns())
    assert list(Path(os.environ["XDG_CACHE_HOME"], "amp-clipfix").glob("build-*")) == []
    read.clear()
    assert sources_digest(str(package), time.time_ns()) == first and len(read) == 5


@pytest.mark.parametrize("whose", ["another secret", "another package"])
def test_a_table_not_of_this_user_or_package_is_not_used(
    package: Path, monkeypatch: pytest.MonkeyPatch, whose: str
) -> None:
    sources_digest(str(package), time.time_ns() + LATER)
    table = cache_layout._table_path(str(package))
    assert table is not None and os.path.isfile(table)
    if whose == "another secret":
        name, key = cache_layout.BUILD_TABLE, secret(package) or b""
        value = cache_layout.unseal(key, name, Path(table).read_bytes())
        assert value is not None
        Path(table).write_bytes(seal(b"k" * 32, name, value))
    else:  # the package folder renamed (its files' statuses kept), its table copied along
        other = package.rename(package.parent / "other")
        moved = cache_layout._table_path(str(other))
        assert moved is not None
        shutil.copy(table, moved)
        package = other
    read = reads(monkeypatch)
    found = sources_digest(str(package), time.time_ns() + LATER)
    assert len(read) == 5
    assert found == cold(package, monkeypatch)
