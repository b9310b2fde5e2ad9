"""A method's callers looked for only in the modules that name its class when no object of the
class can leave them (analysis/contained.py): the same callers as the search of every module
that writes the method's name, and the other modules not parsed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from amp_clipfix.analysis import callers as callers_module
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.recording import Reads, Recording
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import module_name, summarise

# Modules that write `step` and call it on objects of their own: each is a candidate of the
# whole search, and none can hold a `Model`.
BYSTANDERS = {
    f"bystander{i}.py": f"""
        class Other{i}:
            def step(self, x):
                return x

        def drive(thing):
            thing.step({i})

        Other{i}().step(0)
        """
    for i in range(10)
}

MODEL = """
    import torch


    class Model(torch.nn.Module):
        def step(self, x):
            return x

        def run(self):
            self.step(1)


    def main():
        model = Model()
        model.step(2)
        model.run()
        torch.save(model, "m.pt")
    """


def project(tmp_path: Path, files: dict[str, str]) -> Evaluator:
    contents = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        contents[path] = path.read_bytes()
    return project_evaluator(tmp_path, contents, lambda p: summarise(tmp_path, p, p.read_text()))


def step_callers(tmp_path: Path, files: dict[str, str], whole: bool) -> tuple[list[str], set[str]]:
    """The calls of `Model.step` (module:line) and the modules the evaluator parsed; `whole`:
    the search of every module that writes `step` (the containment not asked)."""
    evaluator = project(tmp_path, files)
    summary = evaluator.summary(tmp_path / "model.py")
    assert summary is not None
    cls = next(c for c in summary.classes() if c.name == "Model")
    method = next(s for s in cls.body if getattr(s, "name", None) == "step")
    if whole:
        original = callers_module.method_files
        callers_module.method_files = lambda *args: args[-1]
    try:
        found = evaluator.callers(method, evaluator.ctx(summary, method, cls))
    finally:
        if whole:
            callers_module.method_files = original
    calls = sorted(f"{ctx.summary.path.name}:{call.lineno}" for call, ctx in found)
    return calls, {path.name for path in evaluator.summaries}


def test_a_contained_class_s_callers_are_read_in_its_module_only(tmp_path: Path) -> None:
    files = {"model.py": MODEL, **BYSTANDERS}
    contained, parsed = step_callers(tmp_path, files, whole=False)
    whole, parsed_whole = step_callers(tmp_path, files, whole=True)
    assert contained == whole == ["model.py:10", "model.py:15"]
    assert parsed == {"model.py"}
    assert set(BYSTANDERS) <= parsed_whole


ESCAPES = {
    "returned": (
        "def make():\n    return Model()\n",
        "from model import make\nmake().step(3)\n",
    ),
    "passed to project code": (
        "def hand():\n    from user import run\n    run(Model())\n",
        "def run(m):\n    m.step(4)\n",
    ),
    "stored in an attribute": (
        "class Holder:\n    def __init__(self):\n        self.m = Model()\n",
        "from model import Holder\nHolder().m.step(5)\n",
    ),
    "a subclass elsewhere": (
        "",
        "from model import Model\nclass Sub(Model):\n    def go(self):\n        self.step(6)\n"
        "Sub().go()\n",
    ),
    "imported under another name": ("", "from model import Model as M\nM().step(7)\n"),
    "read from its module": ("", "import model\nmodel.Model().step(8)\n"),
    "named by a string": (
        "",
        "import importlib\ncls = getattr(importlib.import_module('model'), 'Model')\n"
        "cls().step(9)\n",
    ),
    "a module global": ("MODEL = Model()\n", "from model import MODEL\nMODEL.step(10)\n"),
    "self handed on": ("", ""),
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_an_object_that_may_leave_its_module_keeps_the_whole_search(
    tmp_path: Path, case: str
) -> None:
    extra, user = ESCAPES[case]
    model = textwrap.dedent(MODEL) + extra
    if case == "self handed on":
        model = model.replace("self.step(1)", "from user import use\n\n        use(self)")
        user = "def use(m):\n    m.step(11)\n"
    files = {"model.py": model, "user.py": user, **BYSTANDERS}
    contained, parsed = step_callers(tmp_path, files, whole=False)
    whole, _ = step_callers(tmp_path, files, whole=True)
    assert contained == whole
    assert "user.py" in parsed


FOUND = sorted(set(ESCAPES) - {"named by a string", "self handed on"})


def test_the_whole_search_finds_the_escaped_callers(tmp_path: Path) -> None:
    """The escapes above are real for the evaluator: its whole search finds the call in the
    other module (so a containment that let them through would lose it)."""
    for case in FOUND:
        extra, user = ESCAPES[case]
        folder = tmp_path / case.replace(" ", "_")
        folder.mkdir()
        files = {"model.py": textwrap.dedent(MODEL) + extra, "user.py": user}
        whole, _ = step_callers(folder, files, whole=True)
        assert any(call.startswith("user.py:") for call in whole), case


def test_a_module_the_check_leaves_out_is_noted_as_text_tests_not_as_read(tmp_path: Path) -> None:
    """A module that writes the class's name only in a comment is left out by its text: the
    query notes each test with its result, so an edit that keeps the results (any edit of
    `notes.py` that names no `Model` as an import, attribute or string) keeps the answer."""
    notes = (
        "# Model.step is documented elsewhere\nclass Other:\n    def step(self):\n        pass\n"
    )
    files = {"model.py": MODEL, "notes.py": notes, **BYSTANDERS}
    contents = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        contents[path] = path.read_bytes()
    reads = Reads()  # what a query notes (queries.py): the evaluator reads through it
    evaluator = Evaluator(
        {}, lambda p: summarise(tmp_path, p, p.read_text()), Recording(contents, reads)
    )
    evaluator.index_modules({module_name(tmp_path, path)[0]: path for path in contents})
    summary = evaluator.summary(tmp_path / "model.py")
    assert summary is not None
    cls = next(c for c in summary.classes() if c.name == "Model")
    method = next(s for s in cls.body if getattr(s, "name", None) == "step")
    found = evaluator.callers(method, evaluator.ctx(summary, method, cls))

    assert sorted(f"{ctx.summary.path.name}:{call.lineno}" for call, ctx in found) == [
        "model.py:10",
        "model.py:15",
    ]
    notes_path = str(tmp_path / "notes.py")
    assert notes_path not in reads.files
    assert set(reads.tests[notes_path].values()) == {False}
    assert (("fn", "referenced", b"Model"),) in reads.tests[notes_path]
