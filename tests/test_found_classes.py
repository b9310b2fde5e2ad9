"""The cache's unpickler finds each class an entry names once a process (analysis/cache.py
`CachedData.find_class`): a warm run unpickles ~1,400 class references of a few dozen classes.
What is no cached data is refused every time and never kept."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pytest
from spied import first_arguments

from amp_clipfix.analysis import cache as cache_module
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.kinds import ErrorKind


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[type]:
    """The classes whose kind was checked (`_is_cached_type`), from an empty memo."""
    monkeypatch.setattr(cache_module, "_FOUND", {})
    return first_arguments(monkeypatch, cache_module, "_is_cached_type")


def key(number: int) -> str:
    return f"query-{number:064x}"


def test_each_class_is_checked_once_over_many_entries(tmp_path: Path, checked: list[type]) -> None:
    cache = Cache(tmp_path)
    values = [[Path(f"a{n}.py"), ErrorKind.PARSE, Path("b.py")] for n in range(5)]
    for number, value in enumerate(values):
        cache.store(key(number), value)
    assert [Cache(tmp_path).load(key(number)) for number in range(5)] == values
    # a path is held as its text (cache.pickled): no class to find
    assert [kind.__name__ for kind in checked] == ["ErrorKind"]


@pytest.mark.parametrize(
    "reference",
    [
        ("os", "system"),  # not ours
        ("amp_clipfix.observed", "read_bytes"),  # ours, no class
        ("amp_clipfix.cache_layout", "Entries"),  # ours, a class that is no cached data
        ("amp_clipfix.kinds", "NoSuchName"),
    ],
)
def test_what_is_no_cached_data_is_refused_each_time_and_never_kept(
    tmp_path: Path, checked: list[type], reference: tuple[str, str]
) -> None:
    module, name = reference
    # a protocol 4 pickle of the reference itself: two short strings, STACK_GLOBAL, STOP
    data = b"\x80\x04"
    for text in (module, name):
        data += b"\x8c" + bytes([len(text)]) + text.encode()
    data += b"\x93."
    cache = Cache(tmp_path)
    cache.store_pickled(key(1), data)
    for _ in range(2):
        assert Cache(tmp_path).load(key(1)) is None
        with pytest.raises(pickle.UnpicklingError):
            cache_module.CachedData(io.BytesIO(data)).find_class(module, name)
    assert cache_module._FOUND == {}


def test_a_class_found_once_gives_the_same_values_as_a_first_load(
    tmp_path: Path, checked: list[type]
) -> None:
    cache = Cache(tmp_path)
    cache.store(key(1), {"path": Path("x.py"), "kind": ErrorKind.READ})
    first = Cache(tmp_path).load(key(1))
    again = Cache(tmp_path).load(key(1))
    assert first == again == {"path": Path("x.py"), "kind": ErrorKind.READ}
    assert len(checked) == 1
    assert set(cache_module._FOUND.values()) == {ErrorKind}
