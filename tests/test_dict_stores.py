"""What a name holding a dict may hold at a `Trainer(**cfg)` call, after the statements that store
into it (analysis/dict_stores.py), and what a function's `global` assignment gives a module's
name (analysis/evaluate.py): each value is what the tool reports a site from."""

from __future__ import annotations

from pathlib import Path

from evaluated import one_module

from amp_clipfix.analysis.values import DictV, Lit, Opaque


def spread_of(tmp_path: Path, source: str, call: str = "Trainer") -> list[object]:
    """The values of the first `**` argument of the last `call(...)` in `source`, each dict's
    entries forced."""
    evaluator, summary = one_module(tmp_path, source)
    made = summary.calls(call)[-1]
    spread = next(k.value for k in made.keywords if k.arg is None)
    values = evaluator.force(evaluator.ev(spread, evaluator.ctx_of(summary, spread)))
    for value in values:
        if isinstance(value, DictV):
            value.entries = {k: evaluator.force(v) for k, v in value.entries.items()}
    return values


def entry(values: list[object], key: str) -> list[str]:
    """The values one key of the (single) dict may take: literals as written, `?` for a value
    decided at run time."""
    (value,) = values
    assert isinstance(value, DictV)
    return [
        item.text if isinstance(item, Lit) else "?" if isinstance(item, Opaque) else repr(item)
        for item in value.entries.get(key, [])
    ]


def values_of(tmp_path: Path, source: str, key: str) -> list[str]:
    return entry(spread_of(tmp_path, source), key)


def test_a_store_beside_the_binding_in_the_main_block_is_certain(tmp_path: Path) -> None:
    source = """\
from lightning import Trainer

if __name__ == "__main__":
    cfg = {"gradient_clip_val": 1.0}
    cfg["precision"] = "16-mixed"
    Trainer(**cfg)
"""
    assert values_of(tmp_path, source, "precision") == ["16-mixed"]


def test_a_store_under_a_condition_may_leave_the_key_absent(tmp_path: Path) -> None:
    source = """\
from lightning import Trainer

def main(args):
    cfg = {"gradient_clip_val": 1.0}
    if args.amp:
        cfg["precision"] = "16-mixed"
    Trainer(**cfg)
"""
    assert values_of(tmp_path, source, "precision") == ["16-mixed", "?"]
    assert values_of(tmp_path, source, "gradient_clip_val") == ["1.0"]


def test_a_store_under_a_condition_on_a_key_the_dict_holds_adds_a_value(tmp_path: Path) -> None:
    source = """\
import sys
from lightning import Trainer

cfg = {"precision": "32-true"}
if "--amp" in sys.argv:
    cfg["precision"] = "16-mixed"
Trainer(**cfg)
"""
    assert values_of(tmp_path, source, "precision") == ["32-true", "16-mixed"]


def test_setdefault_under_a_condition_may_leave_the_key_absent(tmp_path: Path) -> None:
    source = """\
import os
from lightning import Trainer

cfg = {"precision": "16-mixed"}
if os.environ.get("CLIP"):
    cfg.setdefault("gradient_clip_val", 0.5)
cfg.setdefault("precision", "32-true")
Trainer(**cfg)
"""
    assert values_of(tmp_path, source, "gradient_clip_val") == ["0.5", "?"]
    assert values_of(tmp_path, source, "precision") == ["16-mixed"]


def test_a_store_in_the_block_of_its_binding_runs_with_it(tmp_path: Path) -> None:
    source = """\
from lightning import Trainer

def main(amp):
    if amp:
        cfg = {}
        cfg["precision"] = "16-mixed"
    else:
        cfg = {"precision": "32-true"}
    Trainer(**cfg)
"""
    # the store is not in the block of the other binding: it may not run for that dict
    values = spread_of(tmp_path, source)
    assert sorted(entry([value], "precision") for value in values) == [
        ["16-mixed", "?"],
        ["32-true", "16-mixed"],
    ]


def test_a_lambda_scope_has_no_stores(tmp_path: Path) -> None:
    """A lambda's parameter is decided at run time; its body, an expression, holds no
    statement that stores into it (and is never read as a block of statements)."""
    source = """\
from lightning import Trainer

make = lambda cfg: Trainer(**cfg) if cfg else None
make({"precision": "16-mixed"})
"""
    assert [type(value) for value in spread_of(tmp_path, source)] == [Opaque]


def test_a_function_rebinding_a_global_gives_the_module_name_its_value(tmp_path: Path) -> None:
    source = """\
from lightning import Trainer

SETTINGS = {"precision": "32-true"}


def configure(amp):
    global SETTINGS
    if amp:
        SETTINGS = {"precision": "16-mixed"}


def main():
    Trainer(**SETTINGS)
"""
    values = spread_of(tmp_path, source)
    assert [entry([value], "precision") for value in values] == [["32-true"], ["16-mixed"]]


def test_a_global_read_inside_its_function_is_the_module_name(tmp_path: Path) -> None:
    source = """\
from lightning import Trainer

SETTINGS = {"precision": "32-true"}


def configure():
    global SETTINGS
    Trainer(**SETTINGS)
    SETTINGS = {"precision": "16-mixed"}
"""
    values = spread_of(tmp_path, source)
    assert [entry([value], "precision") for value in values] == [["32-true"], ["16-mixed"]]


def test_a_key_set_on_every_path_later_is_never_absent(tmp_path: Path) -> None:
    source = """\
import sys
from lightning import Trainer

cfg = {}
if "--amp" in sys.argv:
    cfg["precision"] = "16-mixed"
cfg.setdefault("precision", "bf16-mixed")
Trainer(**cfg)
"""
    assert sorted(values_of(tmp_path, source, "precision")) == ["16-mixed", "bf16-mixed"]
