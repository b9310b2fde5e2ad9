"""A dataclass field read on an instance is what the instance's construction gives it
(analysis/fields.py), and decided at run time wherever the code may set it otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from evaluated import one_module

from amp_clipfix.analysis.values import Lit, Opaque

CONFIG = """\
import argparse
import dataclasses
from dataclasses import dataclass, field

import lightning as L


@dataclass
class Optim:
    lr: float = 1e-3
    fused: bool = True


@dataclass
class Config:
    precision: str = "16-mixed"
    clip: float = 1.0
    optim: Optim = field(default_factory=Optim)
    devices: int = field(default=1)


@dataclass(kw_only=True)
class Named:
    precision: str = "bf16-mixed"


class Plain:
    precision: str = "16-mixed"


"""


def precision_of(tmp_path: Path, body: str, argument: str = "precision") -> list[str]:
    """The values of `argument` of the last `L.Trainer(...)` call: literals as written, `?` for
    one decided at run time."""
    source = CONFIG + body
    evaluator, summary = one_module(tmp_path, source)
    call = summary.calls("Trainer")[-1]
    value = next(k.value for k in call.keywords if k.arg == argument)
    values = evaluator.force(evaluator.ev(value, evaluator.ctx_of(summary, value)))
    return [v.text if isinstance(v, Lit) else "?" if isinstance(v, Opaque) else "" for v in values]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("cfg = Config()\nL.Trainer(precision=cfg.precision)\n", ["16-mixed"]),
        (
            'cfg = Config(precision="bf16-mixed")\nL.Trainer(precision=cfg.precision)\n',
            ["bf16-mixed"],
        ),
        ('cfg = Config("32-true")\nL.Trainer(precision=cfg.precision)\n', ["32-true"]),
        ("L.Trainer(precision=Named().precision)\n", ["bf16-mixed"]),
        # decided at run time: an argument that is, or the construction cannot be bound
        (
            "args = argparse.ArgumentParser().parse_args()\n"
            "cfg = Config(precision=args.precision)\nL.Trainer(precision=cfg.precision)\n",
            ["?"],
        ),
        ("cfg = Config(**{})\nL.Trainer(precision=cfg.precision)\n", ["?"]),
        ('L.Trainer(precision=Named("16-mixed").precision)\n', ["?"]),
        # not a dataclass: what the class body says is not what its instances hold
        ("L.Trainer(precision=Plain().precision)\n", ["?"]),
    ],
)
def test_a_field_is_what_the_construction_gives_it(
    tmp_path: Path, body: str, expected: list[str]
) -> None:
    assert precision_of(tmp_path, body) == expected


def test_a_default_factory_is_called(tmp_path: Path) -> None:
    body = "cfg = Config()\nL.Trainer(precision=cfg.optim.fused, devices=cfg.devices)\n"
    assert precision_of(tmp_path, body) == ["True"]
    assert precision_of(tmp_path, body, "devices") == ["1"]


@pytest.mark.parametrize(
    "store",
    [
        "cfg.precision = args.precision",
        "setattr(cfg, name, value)",
        "vars(cfg).update(overrides)",
        "cfg.__dict__.update(overrides)",
        "cfg.precision += suffix",
    ],
)
def test_a_field_the_code_may_set_from_outside_is_decided_at_run_time(
    tmp_path: Path, store: str
) -> None:
    body = f"cfg = Config()\n{store}\nL.Trainer(precision=cfg.precision)\n"
    assert precision_of(tmp_path, body) == ["16-mixed", "?"]


@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        ("@dataclass(init=False)\nclass Own:\n    precision: str = '16-mixed'\n", ["?"]),
        (
            "@dataclass\nclass Own:\n    precision: str = '16-mixed'\n\n"
            "    def __init__(self, precision):\n        self.precision = precision\n",
            ["?", "bf16-mixed"],  # what its own __init__ assigns, not the field's place
        ),
        ("@dataclass\nclass Own(argparse.Namespace):\n    precision: str = '16-mixed'\n", ["?"]),
    ],
)
def test_a_dataclass_whose_init_is_not_the_generated_one_is_read_as_a_class(
    tmp_path: Path, classes: str, expected: list[str]
) -> None:
    body = f"{classes}\n\nL.Trainer(precision=Own('bf16-mixed').precision)\n"
    assert precision_of(tmp_path, body) == expected
