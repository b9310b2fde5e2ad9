"""A cache entry holds a path as its text (analysis/cache.py `pickled`), built once a run per
text when loaded (`Cache.paths`): pickle's own form names a path's parts, parsed again one by
one for each path of each entry (NeMo's hook command: 837 paths of 339 texts)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from amp_clipfix.analysis.cache import Cache, pickled


def key(number: int) -> str:
    return f"query-{number:064x}"


AWKWARD = [
    Path("a.py"),
    Path("."),
    Path("pkg/sub dir/mod.py"),
    Path("/abs/olute/ünïcode.py"),
    Path("//two/slashes.py"),
    Path(os.fsdecode(b"bad-\xff-byte.py")),  # a name that is no UTF-8: surrogate-escaped
]


def test_a_path_is_held_as_its_text_and_loads_equal(tmp_path: Path) -> None:
    value = {"paths": AWKWARD, "first": AWKWARD[2], "set": frozenset(AWKWARD)}
    data = pickled(value)
    assert b"pathlib" not in data and b"PosixPath" not in data
    cache = Cache(tmp_path)
    cache.store(key(1), value)
    loaded = Cache(tmp_path).load(key(1))
    assert loaded == value
    assert [type(path) for path in loaded["paths"]] == [type(Path())] * len(AWKWARD)  # type: ignore[index]
    assert [str(path) for path in loaded["paths"]] == [str(path) for path in AWKWARD]  # type: ignore[index]


def test_each_text_is_built_once_a_run_over_many_entries(tmp_path: Path) -> None:
    texts = [f"pkg/m{n}.py" for n in range(5)]
    writer = Cache(tmp_path)
    for number in range(4):  # every entry holds every path, each as a new object
        writer.store(key(number), [Path(text) for text in texts])
    cache = Cache(tmp_path)
    loaded = [cache.load(key(number)) for number in range(4)]
    assert all(value == [Path(text) for text in texts] for value in loaded)
    assert sorted(cache.paths) == sorted(texts)  # 5 paths built, not 20
    assert all(value[n] is loaded[0][n] for value in loaded for n in range(5))  # type: ignore[index]
    assert Cache(tmp_path).load(key(0)) == loaded[0]  # another run builds its own


def test_an_entry_of_the_earlier_form_still_loads(tmp_path: Path) -> None:
    value = [Path("x.py"), Path("/y/z.py")]
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)  # the parts of each path
    assert b"pathlib" in data
    Cache(tmp_path).store_pickled(key(1), data)
    assert Cache(tmp_path).load(key(1)) == value


def calling_path_of(argument: object) -> bytes:
    """An entry that calls the path reference with `argument` (protocol 4, no frame): the
    module and name `pickled` writes, STACK_GLOBAL, the argument, a tuple of it, REDUCE, STOP."""
    reference = b"\x80\x04"
    for text in (b"amp_clipfix.analysis.cache", b"path_of"):
        reference += b"\x8c" + bytes([len(text)]) + text
    assert all(text in pickled(Path("x.py")) for text in reference.split(b"\x8c")[1:])
    return reference + b"\x93" + pickle.dumps(argument, protocol=3)[2:-1] + b"\x85R."


@pytest.mark.parametrize(
    ("argument", "loaded"), [("y.py", Path("y.py")), (b"y.py", None), (3, None), (None, None)]
)
def test_a_path_not_held_as_a_text_is_a_miss(
    tmp_path: Path, argument: object, loaded: Path | None
) -> None:
    Cache(tmp_path).store_pickled(key(1), calling_path_of(argument))
    assert Cache(tmp_path).load(key(1)) == loaded
