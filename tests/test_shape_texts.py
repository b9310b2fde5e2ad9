"""ACF007, ACF008 and ACF009 parse a file holding their word only where its text may write the
call their every finding is made of (analysis/shape_texts.py): the tests say yes wherever the
tree holds that call, however it is spelled, and the rules' reports are those of parsing every
file holding the word."""

from __future__ import annotations

import ast
import itertools
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from spied import check_counting_parses

from amp_clipfix.analysis import shape_texts
from amp_clipfix.analysis.shape_texts import CLIP_GRADIENTS, CLIP_VAL_KEYWORD, PLAIN_BACKWARD
from amp_clipfix.cli import main


def plain_backward(tree: ast.AST) -> bool:
    """ACF008's call: `<x>.backward(...)` without a positional argument."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "backward"
        and not n.args
        for n in ast.walk(tree)
    )


def clip_gradients(tree: ast.AST) -> bool:
    """ACF007's calls: `<x>.clip_gradients(...)`, or a call given that attribute first."""
    return any(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr == "clip_gradients")
            or (
                bool(n.args)
                and isinstance(n.args[0], ast.Attribute)
                and n.args[0].attr == "clip_gradients"
            )
        )
        for n in ast.walk(tree)
    )


def clip_val_keyword(tree: ast.AST) -> bool:
    """ACF009's calls: a `gradient_clip_val=` keyword argument."""
    return any(isinstance(n, ast.keyword) and n.arg == "gradient_clip_val" for n in ast.walk(tree))


SHAPES = {
    "plain backward": (PLAIN_BACKWARD, plain_backward, "backward"),
    "clip_gradients": (CLIP_GRADIENTS, clip_gradients, "clip_gradients"),
    "gradient_clip_val=": (CLIP_VAL_KEYWORD, clip_val_keyword, "gradient_clip_val"),
}

# What may stand around a name in a call: receivers, dots, brackets, gaps Python reads as none
# (spaces, line breaks inside brackets, continuations, comments), arguments of each kind.
GAPS = ["", " ", "\n", " \\\n", "  # note (x=1)\n", "\t"]
BEFORE = ["loss.", "(loss.", "self.fabric.", "partial(fabric.", "f(", "", "_run_test_", "x."]
AFTER = [")", "", ")("]
ARGUMENTS = [
    "",
    "loss",
    "retain_graph=True",
    "**kw",
    "*args",
    "a == b",
    "x, y=1",
    "max_norm=1.0",
    "(x)",
    "lambda v=1: v",
    "ｒetain_graph=True",
]


def programs(name: str, count: int) -> list[str]:
    rng = random.Random(35)
    found = []
    spellings = [name, name.replace(name[0], "ｂ" if name[0] == "b" else name[0], 1)]
    if name[0] == "g":
        spellings.append("ｇ" + name[1:])
    if name[0] == "c":
        spellings.append("ｃ" + name[1:])
    for _ in range(count):
        before, after, argument = rng.choice(BEFORE), rng.choice(AFTER), rng.choice(ARGUMENTS)
        spelled = rng.choice(spellings)
        gap = [rng.choice(GAPS) for _ in range(4)]
        if rng.random() < 0.3:  # the name as a keyword of a call
            text = f"Trainer({gap[0]}{spelled}{gap[1]}={gap[2]}{argument or '1'}{gap[3]})"
        else:
            call = f"{before}{gap[0]}{spelled}{gap[1]}{after}{gap[2]}({gap[3]}{argument})"
            opened = call.count("(") - call.count(")")
            text = call + ")" * max(opened, 0)
        found.append(f"def f():\n    {text}\n")
    return found


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_text_whose_tree_holds_the_call_passes(shape: str) -> None:
    test, holds, name = SHAPES[shape]
    checked = 0
    for program in programs(name, 3000):
        try:
            tree = ast.parse(program)
        except SyntaxError:
            continue
        checked += 1
        if holds(tree):
            assert test(None, program.encode("utf-8")), program
    assert checked > 500


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        ("plain backward", "fabric.backward(loss)\nself.manual_backward(loss)\n"),
        ("plain backward", "loss.backward(gradient, retain_graph=True)\n"),
        ("plain backward", "torch.autograd.backward(t == u)\nbackward_hook()\n"),
        ("clip_gradients", "_run_test_clip_gradients(fabric)\ntest_clip_gradients_x = 1\n"),
        ("clip_gradients", 'hooks = ["clip_gradients", "on_after_backward"]\n'),
        ("clip_gradients", 'def f():\n    """clip_gradients by value works."""\n'),
        ("clip_gradients", "def clip_gradients(self, optimizer):\n    clip_gradients(x, 1)\n"),
        ("gradient_clip_val=", "if gradient_clip_val == 0:\n    x = 'gradient_clip_value'\n"),
        ("gradient_clip_val=", "trainer.gradient_clip_val\n"),
    ],
)
def test_a_text_that_cannot_write_the_call_fails(shape: str, text: str) -> None:
    test, holds, _ = SHAPES[shape]
    assert not holds(ast.parse(text))
    assert not test(None, text.encode("utf-8"))


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        ("plain backward", "(loss\n  .backward  # c\n)(\n  retain_graph=True)\n"),
        ("plain backward", "loss.ｂackward()\n"),
        ("plain backward", "loss.backward(**options)\n"),
        ("clip_gradients", "run = partial(fabric.clip_gradients, model)\n"),
        ("clip_gradients", "(fabric .  # c\n  clip_gradients)(model, opt, max_norm=1)\n"),
        ("clip_gradients", "fabric.\\\n    clip_gradients(model, opt, max_norm=1)\n"),
        ("clip_gradients", "fabric.ｃlip_gradients(model, opt, max_norm=1)\n"),
        ("gradient_clip_val=", "Trainer(gradient_clip_val \\\n = 0.5)\n"),
        ("gradient_clip_val=", "Trainer(ｇradient_clip_val=0.5)\n"),
    ],
)
def test_written_calls_pass(shape: str, text: str) -> None:
    test, holds, _ = SHAPES[shape]
    assert holds(ast.parse(text))
    assert test(None, text.encode("utf-8"))


MODULE = """\
import lightning as L
import torch
from lightning.fabric import Fabric


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.layer(batch).sum()
        {backward}
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


fabric = Fabric(precision="16-mixed")
model, optimizer = fabric.setup(torch.nn.Linear(2, 2), torch.optim.SGD([], lr=0.1))
{clip}
trainer = L.Trainer(precision="16-mixed", {keyword})
trainer.fit(Model())
"""

# Each part as the rules find it, and as a file holding only the rule's word writes it.
PARTS = {
    "backward": ("loss.backward()", "fabric.backward(loss)"),
    "clip": (
        "fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "_run_test_clip_gradients(fabric)",
    ),
    "keyword": ("gradient_clip_val=0.5", 'max_epochs=len("gradient_clip_val")'),
}


def report(root: Path) -> str:
    arguments = ["check", "--no-cache", "--format", "json", "--jobs", "1", str(root)]
    return CliRunner().invoke(main, arguments).output


@pytest.mark.parametrize("written", list(itertools.product((0, 1), repeat=3)))
def test_the_reports_equal_those_of_parsing_every_file_with_the_word(
    written: tuple[int, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = {part: PARTS[part][which] for part, which in zip(sorted(PARTS), written)}
    (tmp_path / "train.py").write_text(MODULE.format(**parts), encoding="utf-8")
    tested = report(tmp_path)
    monkeypatch.setattr(shape_texts.MayWrite, "__call__", lambda self, path, data: True)
    assert report(tmp_path) == tested
    found = {code: f'"{code}"' in tested for code in ("ACF007", "ACF008", "ACF009")}
    assert found == {"ACF007": not written[1], "ACF008": not written[0], "ACF009": not written[2]}


def test_a_file_holding_only_the_words_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`other.py` holds `.backward(`, `clip_gradients` and `gradient_clip_val` but writes none
    of the three calls: no rule parses it (each did before)."""
    parts = {part: PARTS[part][0] for part in PARTS}
    (tmp_path / "train.py").write_text(MODULE.format(**parts), encoding="utf-8")
    (tmp_path / "other.py").write_text(
        "def run(fabric, loss, trainer):\n"
        "    fabric.backward(loss)\n"
        "    _run_test_clip_gradients(fabric)\n"
        "    return trainer.gradient_clip_val\n",
        encoding="utf-8",
    )
    code, _, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert code == 1
    assert "train.py" in parsed
    assert "other.py" not in parsed
