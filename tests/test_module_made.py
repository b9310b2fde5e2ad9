"""A module-level function is looked for as `x.f(...)` or through a star import only where an
object of its module may be made somewhere in the project (name_texts.module_made).

The caller search reads a file that does not import `f` by name when it writes the module's
name and `f` as an attribute: `def main():` and `model.train()` in every example script made
each of them a file that may call `train` of a script `main.py`, and each `model.train` was
evaluated (ColossalAI: 7,734 evaluations for one question). The evaluator makes a module object
only from an import, a package's attribute or string, or the bare name in its package's
`__init__.py`, and a star import brings names in bare: where no file writes the name so, no
`x.train` is that function. Where one does, the callers are found as before.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis import callers
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import summarise

MAIN = "def train(model):\n    return model\n"
# a script defining `main` and calling a `train` method: not a caller of main.py's `train`
SCRIPT = "def main(model):\n    model.train()\n\n\nif __name__ == '__main__':\n    main(None)\n"


def evaluator_of(root: Path, files: dict[str, str]) -> Evaluator:
    contents = {}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        contents[path] = text.encode()
    return project_evaluator(root, contents, lambda p: summarise(root, p, p.read_text()))


def callers_of_train(root: Path, files: dict[str, str]) -> tuple[list[str], list[str]]:
    """The calls found calling `tools/main.py`'s `train` (file and code), and the callees the
    search evaluated to learn it (calls_function)."""
    evaluator = evaluator_of(root, files)
    summary = evaluator.summary(root / "tools" / "main.py")
    assert summary is not None
    train = summary.tree.body[0]
    assert isinstance(train, ast.FunctionDef)
    asked: list[str] = []
    calls_function = callers.CallerIndex.calls_function

    def spied(self: Evaluator, call: ast.Call, *args: object) -> bool:
        asked.append(f"{call.lineno}:{ast.unparse(call.func)}")
        return calls_function(self, call, *args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(callers.CallerIndex, "calls_function", spied)
        found = evaluator.callers(train, evaluator.ctx_of(summary, train))
    return sorted(f"{c.summary.path.name}:{ast.unparse(call)}" for call, c in found), asked


def test_scripts_that_cannot_make_the_module_are_not_asked(tmp_path: Path) -> None:
    """Fails on a3d197b: each script's `model.train` was evaluated."""
    files = {"tools/main.py": MAIN, **{f"s{i}.py": SCRIPT for i in range(5)}}
    found, asked = callers_of_train(tmp_path, files)
    assert found == []
    assert not [a for a in asked if a.endswith("model.train")]


MADE = {
    "import main": "import main\n\n\ndef main_loop(m):\n    main.train(m)\n",
    "import as": "import tools.main as main\n\n\ndef run(m):\n    main.train(m)\n",
    "from a package": "from tools import main\n\n\ndef run(m):\n    main.train(m)\n",
    "a package's attribute": "import tools\n\n\ndef main(m):\n    tools.main.train(m)\n",
    "getattr": "import tools\n\n\ndef main(m):\n    getattr(tools, 'main').train(m)\n",
    "a star": "from main import *\n\n\ndef main_loop(m):\n    train(m)\n",
    "a relative star": "from .main import *\n\n\ndef main_loop(m):\n    train(m)\n",
}


@pytest.mark.parametrize("name", sorted(MADE))
def test_where_a_file_can_make_it_the_scripts_are_asked(name: str, tmp_path: Path) -> None:
    """A file makes the module's object (or imports its names with a star): the scripts that
    write `main` are read, as before (one of them may be handed the module), and so is the
    file making it."""
    files = {
        "tools/__init__.py": "",
        "tools/main.py": MAIN,
        "tools/caller.py": MADE[name],
        "s0.py": SCRIPT,
    }
    found, asked = callers_of_train(tmp_path, files)
    assert "2:model.train" in asked


def test_the_package_init_naming_its_submodule_makes_it(tmp_path: Path) -> None:
    """`main` written bare in `tools/__init__.py` is the submodule there: the scripts that
    write `main` may be handed it, and are asked."""
    files = {
        "tools/__init__.py": "from . import main as _m\nmain = _m\n",
        "tools/main.py": MAIN,
        "s0.py": SCRIPT,
    }
    _, asked = callers_of_train(tmp_path, files)
    assert "2:model.train" in asked
