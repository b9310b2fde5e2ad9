"""git's listings decoded at once (paths.listing_names) and their names found plain at once
(paths.all_plain), branch `hook36`: the hook's command decoded each of NeMo's 3,900 listed
names on its own, twice (discovery's listing and `--tracked-only`'s index), and asked each
whether it is plain. Random listings give the names, plainness and index names that asking
name by name gives; a run decodes each listing once, whatever the number of files."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_hostile_fs import git

from amp_clipfix import paths, settings
from amp_clipfix.paths import all_plain, index_name, index_names, is_plain, listing_names
from amp_clipfix.project import discover as discover_module

PARTS = [b"a", b"b.py", b".", b"..", b"", b".git", b"..x", b"x..", b"...", b"a b", "é".encode()]
PARTS += [b"caf\xe9", b"\xff\xfe", b"\xc3", b"x\xc3\xa9y"]  # no UTF-8: surrogate-escaped
ROOTS = ["/tmp/r", "/tmp/r/", "/", "//tmp/r", "/tmp/./r", "/tmp/x/../r", "relative/r"]


def random_listing(generator: random.Random, plain: bool) -> bytes:
    """NUL-separated names (ending with a NUL, as git's `-z`), each of random parts; `plain`:
    none empty, `.` or `..`, nor with a leading or trailing `/`."""
    names = []
    for _ in range(generator.randrange(0, 60)):
        choices = [p for p in PARTS if p not in (b"", b".", b"..")] if plain else PARTS
        name = b"/".join(generator.choice(choices) for _ in range(generator.randrange(1, 5)))
        if not plain and generator.random() < 0.05:
            name = generator.choice([b"/", b""]) + name + generator.choice([b"/", b""])
        names.append(name)
    return b"".join(name + b"\0" for name in names)


def test_random_listings_give_each_name_s_answers() -> None:
    generator = random.Random(36)
    plain_seen = 0
    for round_ in range(3000):
        listing = random_listing(generator, plain=round_ % 2 == 0)
        names = listing_names(listing)
        assert names == [os.fsdecode(name) for name in listing.split(b"\0") if name]
        assert all_plain(names) == all(map(is_plain, names)), names
        plain_seen += all_plain(names) and bool(names)
        root = generator.choice(ROOTS)
        expected = [index_name(os.path.join(root, name)) for name in names]
        assert index_names(root, names) == expected
    assert plain_seen > 500 or not paths.PLAIN_NAMES


def test_a_name_that_is_not_plain_is_found_where_it_stands() -> None:
    plain = ["a.py", "pkg/b.py", "..x/y.py", "x../.y", "...", ".git/z"]
    for odd in ["", ".", "..", "./a", "a/.", "a/./b", "../a", "a/..", "a/../b", "/a", "a/", "a//b"]:
        for at in range(len(plain) + 1):
            names = [*plain[:at], odd, *plain[at:]]
            assert not all_plain(names), names
    assert all_plain(plain) == paths.PLAIN_NAMES
    assert all_plain([]) == paths.PLAIN_NAMES
    assert not all_plain(["a\0", "."])  # a NUL in a name: asked name by name
    assert all_plain(["a\0b", "c"]) == paths.PLAIN_NAMES


def committed(root: Path, modules: int) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    for number in range(modules):
        (root / "pkg" / f"m{number}.py").write_text("import torch\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.mark.skipif(not paths.PLAIN_NAMES, reason="POSIX names")
def test_the_hook_command_decodes_each_listing_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One decode per listing parsed (the index for the walk, and again for `--tracked-only`),
    for 5 tracked files as for 60, with the bytes of a run that decodes name by name."""
    fsdecode = os.fsdecode
    decoded: list[bytes] = []

    def counted(name: bytes | str) -> str:
        if isinstance(name, bytes):
            decoded.append(name)
        return fsdecode(name)

    def by_name(listing: bytes) -> list[str]:
        return [fsdecode(name) for name in listing.split(b"\0") if name]

    hook = ("check", "--no-cache", "--tracked-only", "--force-exclude", "--", "pkg/m1.py")
    for modules in (5, 60):
        root = committed(tmp_path / f"p{modules}", modules)
        with monkeypatch.context() as patched:
            patched.setattr(os, "fsdecode", counted)
            run = amp_clipfix(root, *hook)
        assert run.code == 0, run.stderr
        assert len(decoded) == 2, len(decoded)  # without listing_names: 2 x (modules + 1)
        decoded.clear()
        with monkeypatch.context() as patched:
            patched.setattr(settings, "listing_names", by_name)
            patched.setattr(discover_module, "listing_names", by_name)
            patched.setattr(discover_module, "all_plain", lambda names: False)
            name_by_name = amp_clipfix(root, *hook)
        assert (run.code, run.stdout, run.stderr) == (
            name_by_name.code,
            name_by_name.stdout,
            name_by_name.stderr,
        )
