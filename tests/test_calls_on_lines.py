"""The searches that want the calls of one name read only the calls on the lines writing it
(`Summary.calls_writing`), not every call of the module (`walked_calls`): ACF007's
`x.clip_gradients(...)` and its partials (`partials.method_calls`), the Trainer fits
(`ProjectFacts.fits` / `modules_of`), LightningCLI's `trainer_defaults=` (`cli_config.defaulted`)
and the calls of a clipping helper (`clip_tail`). A call each of them keeps writes the name in its
callee, its first argument or its keyword, so it is among those calls, in the same order, however
it is written: the name on a line of its own, after a backslash, in an NFKC spelling, inside an
f-string or a decorator."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis.summary import Summary, called_name, summarise
from amp_clipfix.cli import main

SOURCE = """\
import functools


@decorate(lambda m: m.fit(x))
class Model:
    def step(self, fabric, model, optimizer, trainer, clip_all):
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        (fabric
         .clip_gradients)(model, optimizer, max_norm=2.0)
        fabric.\\
clip_gradients(model, optimizer, max_norm=3.0)
        fabric.\uff43lip_gradients(model, optimizer, max_norm=4.0)
        clip = functools.partial(
            fabric
            .clip_gradients,
            max_norm=1.0,
        )
        print(f"{trainer.fit(model)} {clip_all(model.parameters())}")
        trainer.fit(
            model)
        trainer.\\
fit(model, datamodule=data)
        trainer.\uff46it(model)
        LightningCLI(
            Model,
            trainer_defaults
            ={"gradient_clip_val": 0.5},
        )
        LightningCLI(Model, **{"trainer_defaults": {}})
        LightningCLI(Model, \uff54rainer_defaults={})
        values = [clip_all(p) for p in groups if clip_all]
        \uff43lip_all(values)
        return (
            clip_all
        )(model.parameters(), 1.0)
"""


def keyword(name: str) -> Callable[[ast.Call], bool]:
    return lambda call: any(k.arg == name for k in call.keywords)


def attribute(name: str) -> Callable[[ast.Call], bool]:
    """`x.name(...)`, or a call whose first argument is `x.name` (a partial of the method)."""

    def test(call: ast.Call) -> bool:
        first = call.args[0] if call.args else None
        return any(isinstance(n, ast.Attribute) and n.attr == name for n in (call.func, first))

    return test


def named(name: str) -> Callable[[ast.Call], bool]:
    return lambda call: called_name(call.func) == name


def fresh(tmp_path: Path) -> Summary:
    summary = summarise(tmp_path, tmp_path / "train.py", SOURCE)
    assert summary is not None
    return summary


@pytest.mark.parametrize(
    ("word", "keeps", "count"),
    [
        ("clip_gradients", attribute("clip_gradients"), 5),
        ("fit", attribute("fit"), 5),
        ("trainer_defaults", keyword("trainer_defaults"), 2),
        ("clip_all", named("clip_all"), 4),
    ],
)
def test_the_calls_on_the_lines_writing_a_name_are_the_calls_a_search_keeps(
    tmp_path: Path, word: str, keeps: Callable[[ast.Call], bool], count: int
) -> None:
    """The same calls, in the same order, as the whole walk filtered; the walk of the lines
    alone leaves calls out (it is a narrower read), and lists none it would not."""
    narrow = fresh(tmp_path).calls_writing(word)
    whole = fresh(tmp_path).walked_calls()
    kept = [call for call in whole if keeps(call)]
    assert len(kept) == count
    assert [(c.lineno, c.col_offset) for c in narrow if keeps(c)] == [
        (c.lineno, c.col_offset) for c in kept
    ]
    assert len(narrow) < len(whole)


FABRIC = """\
import functools

import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)
clip = functools.partial(
    fabric
    .clip_gradients,
    max_norm=1.0,
)

for batch in torch.randn(10, 8, 32, device=fabric.device):
    fabric.backward(model(batch).sum())
    fabric.clip_gradients(model, optimizer, max_norm=1.0)
    (fabric
     .clip_gradients)(model, optimizer, max_norm=2.0)
    fabric.\\
clip_gradients(model, optimizer, max_norm=3.0)
    fabric.\uff43lip_gradients(model, optimizer, max_norm=4.0)
    clip(model, optimizer)
    optimizer.step()
    optimizer.zero_grad()
"""


def test_every_spelling_of_a_fabric_clip_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF007 reads `clip_gradients` calls from the lines writing the name: the call split
    over lines, after a backslash, spelled with a fullwidth letter (NFKC `clip_gradients`) and
    run through a partial whose method is written on a line of its own are all reported."""
    (tmp_path / "train.py").write_text(FABRIC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "-j", "1", "."]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    found = [line.split(": ACF007", 1)[0] for line in lines if ": ACF007 " in line]
    assert found == [f"train.py:{line}:5" for line in (18, 19, 21, 23, 24)]
