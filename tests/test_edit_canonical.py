"""The cache's `canonical` (what a query's key hashes) reads each class's values the way it was
first found for that class (cache._shape): the same keys as asking every value anew, with the
class looked at once."""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import pytest

from amp_clipfix.analysis import cache
from amp_clipfix.analysis.cache import canonical
from amp_clipfix.analysis.project_collect import collect_source
from amp_clipfix.kinds import Strategy
from amp_clipfix.records import is_record, record_names

SOURCE = b"""import torch
import lightning as L


class Module(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=True)


trainer = L.Trainer(precision=16, gradient_clip_val=1.0)
trainer.fit(Module())
"""


def value_by_value(value: object) -> object:
    """canonical as it read every value before: each one's class tested anew."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (type(value).__name__, *(value_by_value(getattr(value, f.name)) for f in fields))
    if is_record(value) and not isinstance(value, type):
        names = record_names(value)
        return (type(value).__name__, *(value_by_value(getattr(value, name)) for name in names))
    if isinstance(value, (set, frozenset)):
        return ("set", *sorted((value_by_value(item) for item in value), key=repr))
    if isinstance(value, dict):
        items = value.items()
        return ("dict", *sorted((repr(value_by_value(k)), value_by_value(v)) for k, v in items))
    if isinstance(value, (list, tuple)):
        return tuple(value_by_value(item) for item in value)
    if isinstance(value, Enum):
        return value.value
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


class Word(str, Enum):
    A = "a"


class Pair(NamedTuple):
    left: object
    right: object


@dataclasses.dataclass(frozen=True)
class Plain:
    name: str
    parts: tuple[object, ...]


def collected_sites(tmp_path: Path) -> list[object]:
    path = tmp_path / "train.py"
    path.write_bytes(SOURCE)
    collection = collect_source(path, SOURCE)
    sites = [read.sites for read in collection.parsed.values()]
    assert sites and any(file.sites for file in sites)  # type: ignore[attr-defined]
    return sites


def test_canonical_gives_the_keys_of_asking_every_value(tmp_path: Path) -> None:
    values: list[object] = [
        collected_sites(tmp_path),
        {"b": {1, 2, 3}, "a": frozenset({"x", "y"}), Path("k"): [True, None, 1.5]},
        (Strategy.AUTO, Word.A, Pair(1, "2"), Plain("p", (PurePosixPath("a/b"), b"raw"))),
        [int, Plain, Word, 7, -0.0, "", ()],
        {Pair(Word.A, frozenset()): {Plain("q", ()): [Strategy.MIGRATE]}},
    ]
    for value in values:
        assert canonical(value) == value_by_value(value)
        assert repr(canonical(value)) == repr(value_by_value(value))


def test_canonical_looks_at_a_class_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[type] = []
    shape = cache._shape

    def counted(kind: type) -> object:
        asked.append(kind)
        return shape(kind)

    monkeypatch.setattr(cache, "_shape", counted)
    monkeypatch.setattr(cache, "_SHAPES", {})
    many = [Plain(str(n), (n, Word.A)) for n in range(50)]
    assert canonical(many) == value_by_value(many)
    assert sorted(map(str, asked)) == sorted(map(str, {list, Plain, str, tuple, int, Word}))
