"""A module that imports a name from a module of its own name (a notebook `hyperpyyaml.ipynb`
running `from hyperpyyaml import load_hyperpyyaml`): the import resolves to the module itself,
whose binding is that import again. Its value is the library's name (`Ext`), as the import
cycle's cut gave it, but as a fact of the module, not a cut: what reads it is memoised for the
run (analysis/self_imports.py)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from amp_clipfix.analysis import evaluate, self_imports
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.values import Ext

FILES = {
    # a notebook or script named after the library it imports
    "docs/yamlish.py": """
        from yamlish import load_yamlish

        loaded = load_yamlish("a: 1")
        """,
    "train.py": """
        from yamlish import load_yamlish

        hparams = load_yamlish(open("train.yaml"))
        model = hparams["model"]
        """,
}


def project(tmp_path: Path, files: dict[str, str]) -> Evaluator:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    contents = {tmp_path / name: (tmp_path / name).read_bytes() for name in files}
    return project_evaluator(tmp_path, contents, lambda p: summarise(tmp_path, p, p.read_text()))


def read(evaluator: Evaluator, path: Path, name: str) -> tuple[list[object], ast.Name]:
    """The values of the first read of `name` in the file, and that read."""
    summary = evaluator.summary(path)
    assert summary is not None
    node = next(
        n
        for n in ast.walk(summary.tree)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    )
    return evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node))), node


@pytest.mark.parametrize("where", ["train.py", "docs/yamlish.py"])
def test_the_name_is_the_library_s_and_memoised(tmp_path: Path, where: str) -> None:
    evaluator = project(tmp_path, FILES)
    values, node = read(evaluator, tmp_path / where, "load_yamlish")
    assert [type(v).__name__ for v in values] == ["Ext"]
    assert values[0].qname == "yamlish.load_yamlish"  # type: ignore[attr-defined]
    assert evaluator.cuts == 0  # no import cycle cut: the run's value
    summary = evaluator.summary(tmp_path / where)
    assert summary is not None
    key = (id(node), id(evaluator.ctx_of(summary, node)))
    assert key in evaluator.memo


def test_the_same_value_as_the_cycle_s_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept, _ = read(project(tmp_path, FILES), tmp_path / "train.py", "hparams")
    monkeypatch.setattr(evaluate, "imports_itself", lambda *args: False)  # the cut, as before
    (tmp_path / "cut").mkdir()
    evaluator = project(tmp_path / "cut", FILES)
    cut, _ = read(evaluator, tmp_path / "cut" / "train.py", "hparams")
    assert evaluator.cuts > 0  # the cycle was cut: nothing above it memoised
    assert [describe(v) for v in cut] == [describe(v) for v in kept]


def describe(value: object) -> str:
    if isinstance(value, Ext):
        return f"Ext:{value.qname}"
    node = getattr(value, "node", None)
    return f"{type(value).__name__}:{getattr(node, 'lineno', '')}"


def imports_itself(tmp_path: Path, files: dict[str, str], where: str, name: str) -> bool:
    evaluator = project(tmp_path, files)
    summary = evaluator.summary(tmp_path / where)
    assert summary is not None
    return self_imports.imports_itself(evaluator, summary, name, summary.imports[name])


def test_imports_itself(tmp_path: Path) -> None:
    assert imports_itself(tmp_path / "a", FILES, "docs/yamlish.py", "load_yamlish")
    # an importer of another name: the module of that name is the other one
    assert not imports_itself(tmp_path / "b", FILES, "train.py", "load_yamlish")
    renamed = {"docs/yamlish.py": "from yamlish import load as load_yamlish\n"}
    assert not imports_itself(tmp_path / "c", renamed, "docs/yamlish.py", "load_yamlish")
    # a module of that exact name elsewhere is the one found (find_module: the name first)
    shadowed = {"yamlish.py": "def load_yamlish(): pass\n", **FILES}
    assert not imports_itself(tmp_path / "d", shadowed, "docs/yamlish.py", "load_yamlish")
    rebound = {
        "docs/yamlish.py": "from yamlish import load_yamlish\n\n"
        "def f():\n    global load_yamlish\n    load_yamlish = None\n"
    }
    assert not imports_itself(tmp_path / "e", rebound, "docs/yamlish.py", "load_yamlish")
    library = {"docs/torch.py": "from torch import load\n"}  # a library's name: never a cycle
    assert not imports_itself(tmp_path / "f", library, "docs/torch.py", "load")
