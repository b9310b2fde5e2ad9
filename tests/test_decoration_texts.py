"""A decorator's applications are looked for only in the files whose text may write one of its
names in a decoration (analysis/decoration_texts.py `may_decorate_with`, asked by
decorators.applications), and in those only in the decorations that write one (a name or an
attribute). lightning-thunder writes `jit` in 80 files, in a decoration in 8: each of the 80 was
parsed, and every decoration reading any attribute (`@torch.no_grad()`, 802 of them) evaluated.

The text test never says no where the parser finds a decoration writing the name (exact cases,
then random modules against `ast`); a file it rules out is not parsed, its test is noted instead
of a read of it; a warm run after an edit that decorates with the name in such a file gives a
cold run's bytes."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_incremental import edit_line, same_as_cold, write

from amp_clipfix.analysis.decoration_texts import may_decorate_with
from amp_clipfix.analysis.decorators import applications
from amp_clipfix.analysis.recording import Reads, Recording, passes
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import summarise

MODULE = Path("/p/module.py")

WRITES = {
    "a name": b"@jit\ndef f():\n    pass\n",
    "an attribute": b"import thunder\n\n@thunder.jit\ndef f():\n    pass\n",
    "a factory's argument": b"@partial(jit, x=1)\ndef f():\n    pass\n",
    "a class's decoration": b"@jit\nclass A:\n    pass\n",
    "a method's, indented": b"class A:\n    @other\n    @jit\n    def f(self):\n        pass\n",
    "an argument lines below": (
        b"@pytest.mark.parametrize(\n    'fn',\n    [eager,\n     jit],\n)\n"
        b"def test(fn):\n    pass\n"
    ),
    "after a string holding a def line": (
        b'@register("""\ndef x():\n""", jit)\ndef f():\n    pass\n'
    ),
    "after a string continued by a backslash": (
        b'@register("a\\\ndef b", jit)\ndef f():\n    pass\n'
    ),
    "lines ended by a carriage return": b"x = 1\r@jit\rdef f():\r    pass\r",
    "after a byte order mark": b"\xef\xbb\xbf@jit\ndef f():\n    pass\n",
    "indented by a form feed": b"\x0c@jit\ndef f():\n    pass\n",
    "in letters Python folds to it": "@ｊｉｔ\ndef f():\n    pass\n".encode(),
    "after a matmul line": b"@dec(a\n@ b, jit)\ndef f():\n    pass\n",
    "after an async comprehension line": (
        b"@dec([x\n async for x in jit])\nasync def f():\n    pass\n"
    ),
}

DOES_NOT = {
    "no decoration": b"f = jit(g)\n",
    "a body only": b"import torch\n\n@torch.no_grad()\ndef f(x):\n    return jit(x)\n",
    "a longer name": b"@jitted\ndef f():\n    pass\n",
    "the next definition's body": b"@cache\ndef f():\n    pass\n\n\ndef g():\n    jit(f)\n",
    "a comment": b"# @jit\ndef f():\n    return jit\n",
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_decoration_writing_the_name_is_found(case: str) -> None:
    assert may_decorate_with(MODULE, WRITES[case], b"jit") is True


@pytest.mark.parametrize("case", sorted(DOES_NOT))
def test_a_text_writing_it_elsewhere_is_ruled_out(case: str) -> None:
    assert may_decorate_with(MODULE, DOES_NOT[case], b"jit") is False


def test_a_notebook_or_a_name_not_ascii_may() -> None:
    assert may_decorate_with(Path("/p/book.ipynb"), b'{"cells": []}', b"jit") is True
    assert may_decorate_with(MODULE, b"x = 1\n", "donnée".encode()) is True
    assert may_decorate_with(None, b"x = 1\n", b"jit") is True


PIECES = [
    "@jit",
    "@thunder.jit",
    "@other",
    "@dec(",
    "@ b",
    "jit",
    "jitted",
    "x",
    "def f():",
    "class A:",
    "async def g():",
    " async for y in z",
    "    pass",
    '"""',
    "'''",
    "'a\\",
    '"',
    "#",
    "(",
    ")",
    ",",
    "\\",
    "    ",
    "\t",
    "\x0c",
]


def written_in_decorations(tree: ast.AST) -> set[str]:
    return {
        node.id if isinstance(node, ast.Name) else node.attr
        for statement in ast.walk(tree)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for decoration in statement.decorator_list
        for node in ast.walk(decoration)
        if isinstance(node, (ast.Name, ast.Attribute))
    }


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(PIECES), max_size=4), min_size=1, max_size=10),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_every_module_the_parser_decorates_with_the_name_is_found(
    lines: list[list[str]], newline: str
) -> None:
    source = newline.join(" ".join(line) for line in lines) + newline
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape in a string (`'a\\ `)
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    if "jit" in written_in_decorations(tree):
        assert may_decorate_with(MODULE, source.encode(), b"jit") is True


def test_the_repositorys_own_modules_are_found_for_every_name_they_decorate_with() -> None:
    root = Path(__file__).resolve().parent.parent
    for path in sorted([*root.glob("src/**/*.py"), *root.glob("fixtures/**/*.py")]):
        data = path.read_bytes()
        for name in sorted(written_in_decorations(ast.parse(data))):
            assert may_decorate_with(path, data, name.encode()), (path, name)


STEPS = """\
import functools


def manual_step(clip):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(self, batch, batch_idx):
            opt = self.optimizers()
            loss = fn(self, batch, batch_idx)
            self.manual_backward(loss)
            self.clip_gradients(opt, gradient_clip_val=clip, gradient_clip_algorithm="norm")
            opt.step()
            return loss

        return wrapper

    return decorate
"""

MODULE_OF = """\
import lightning as L
import torch
from steps import manual_step


class {name}(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    {decoration}
    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""

TRAIN = """\
import lightning as L
import torch
from model import Model
from other import Other

trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
trainer.fit(Other(), train_dataloaders=torch.randn(64, 4, 32))
"""

# `other.py` writes `manual_step` (its import) and decorates with it only after the edit
UNDECORATED = "# @manual_step(1.0): not yet"
DECORATED = "@manual_step(1.0)  # and now"


def project(tmp_path: Path, model: str = "@manual_step(1.0)") -> Path:
    root = tmp_path / "project"
    write(root, "steps.py", STEPS)
    write(root, "model.py", MODULE_OF.format(name="Model", decoration=model))
    write(root, "other.py", MODULE_OF.format(name="Other", decoration=UNDECORATED))
    write(root, "train.py", TRAIN)
    return root


def test_a_file_ruled_out_is_not_parsed_and_its_test_is_noted(tmp_path: Path) -> None:
    root = project(tmp_path)
    texts = {path: path.read_bytes() for path in sorted(root.glob("*.py"))}
    reads = Reads()
    evaluator = project_evaluator(root, texts, lambda p: summarise(root, p, p.read_text()))
    evaluator.contents = Recording(evaluator.contents, reads)
    steps = evaluator.summary(root / "steps.py")
    assert steps is not None
    decorate = next(s for s in steps.walked_statements() if getattr(s, "name", "") == "decorate")
    reads.files.clear()

    applied = applications(evaluator, steps, decorate)  # type: ignore[arg-type]

    assert [(node.name, where.path.name, cls and cls.name) for node, where, cls in applied] == [
        ("training_step", "model.py", "Model")
    ]
    other = root / "other.py"
    assert other not in evaluator.summaries
    assert str(other) not in reads.files
    (noted,) = reads.tests[str(other)].items()
    assert noted[1] is False
    assert passes(noted[0], texts[other], other) is False
    decorated = texts[other].replace(UNDECORATED.encode(), DECORATED.encode())
    assert passes(noted[0], decorated, other) is True  # a warm run's test of the changed file


def test_a_warm_run_after_decorating_in_a_ruled_out_file_equals_a_cold_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path, model="# no decoration")
    before = same_as_cold(root)
    assert b"0 findings" in before
    edit_line("other.py", UNDECORATED, DECORATED)(root)
    after = same_as_cold(root)
    assert b"steps.py:11:13: ACF005 " in after and b"1 finding " in after
    edit_line("other.py", DECORATED, UNDECORATED)(root)
    assert same_as_cold(root) == before
