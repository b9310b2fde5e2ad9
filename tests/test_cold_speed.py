"""Issue 35's cold runs: the Fabric rules search only a project that imports a Lightning package
(bench/README.md, "Issue 35, cold runs, session 13")."""

from __future__ import annotations

import ast
import gc
import importlib.machinery
import sys
import types
from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis.collection import Collection
from amp_clipfix.analysis.gate_texts import may_import
from amp_clipfix.analysis.word_index import SCANS_BEFORE_INDEX
from amp_clipfix.pipeline import searching_rules_of
from amp_clipfix.rules.acf006 import BEFORE
from amp_clipfix.run_notes import is_the_command

CLIP = "fabric.backward(loss)\ntorch.nn.utils.clip_grad_norm_(p, 1.0)\nopt.step()\n"


def left_out(tmp_path: Path, files: dict[str, str]) -> set[str]:
    contents = {tmp_path / name: text.encode() for name, text in files.items()}
    collection = Collection(root=tmp_path, contents=contents, searchable=contents)
    return searching_rules_of(collection)[1]


def test_a_fabric_named_but_never_imported_from_lightning_is_not_searched(tmp_path: Path) -> None:
    # diffusers: a `FabricPipeline` and a "lightning-fast" model in a docstring
    pipeline = '"""A lightning-fast pipeline."""\nclass FabricPipeline:\n    pass\n' + CLIP
    assert left_out(tmp_path, {"pipe.py": pipeline}) == {"ACF004", "ACF006", "ACF007"}
    other = {"pipe.py": pipeline, "b.py": "import pytorch_lightning as pl\n"}
    assert left_out(tmp_path, other) == {"ACF004", "ACF006", "ACF007"}
    imported = {"pipe.py": pipeline, "b.py": "import lightning_fabric\n"}
    assert left_out(tmp_path, imported) == {"ACF004"}


@pytest.mark.parametrize(
    ("text", "package"),
    [
        ("import lightning as L\n", "lightning"),
        ("from lightning.fabric import Fabric\n", "lightning"),
        ("import os, lightning_fabric\n", "lightning_fabric"),
        ("import os as o ,  lightning.fabric as f\n", "lightning"),
        ("try: import lightning\nexcept ImportError: pass\n", "lightning"),
        ("x = 1; from lightning import Fabric\n", "lightning"),
        ("from \\\n    lightning import Fabric\n", "lightning"),
        ("import os, \\\r\n  lightning_fabric\n", "lightning_fabric"),
        ("if True:\n\tfrom lightning.fabric import Fabric\n", "lightning"),
        ("from \uff4cightning import Fabric\n", "lightning"),  # NFKC: a fullwidth `l`
    ],
)
def test_an_import_python_reads_is_seen(text: str, package: str) -> None:
    assert may_import(text.encode(), package)


@pytest.mark.parametrize(
    "text",
    [
        "# a lightning-fast model\n",
        "import pytorch_lightning\n",
        "from lightning_utils import x\n",
        "from mypkg import lightning\n",
        "x = 'lightning'\n",
    ],
)
def test_no_import_of_the_package_is_seen(text: str) -> None:
    assert not may_import(text.encode(), "lightning")


def test_a_fabric_imported_over_a_continuation_line_is_still_found(tmp_path: Path) -> None:
    spelled = BEFORE.replace(
        "from lightning.fabric import Fabric", "from lightning.fabric \\\n    import Fabric"
    )
    assert spelled != BEFORE
    (tmp_path / "train.py").write_text(spelled, encoding="utf-8")
    run = amp_clipfix(tmp_path, "check", "--no-cache", ".")
    assert run.code == 1
    assert "ACF006" in run.text


def test_a_program_that_runs_the_command_itself_goes_on_collecting(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BEFORE, encoding="utf-8")
    assert gc.isenabled()
    assert amp_clipfix(tmp_path, "check", "--no-cache", ".").code == 1
    assert gc.isenabled()  # the run's objects are collected: the tests go on
    assert not is_the_command()


def test_the_command_as_the_program_leaves_its_objects_to_the_process_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    program = types.ModuleType("__main__")
    program.__spec__ = importlib.machinery.ModuleSpec("amp_clipfix.__main__", None)
    monkeypatch.setitem(sys.modules, "__main__", program)
    assert is_the_command()  # `python -m amp_clipfix`
    script = types.ModuleType("__main__")
    script.__file__ = "/venv/bin/amp-clipfix"
    script.main = sys.modules["amp_clipfix.replay"].main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert is_the_command()  # the installer's `amp-clipfix` script


def test_a_common_method_s_caller_files_are_the_same_from_the_index(tmp_path: Path) -> None:
    from amp_clipfix.analysis.callers import METHOD_CALLER_FILES
    from amp_clipfix.analysis.resolve import project_evaluator

    model = "class Model:\n    def update(self, x):\n        return x\n"
    contents = {tmp_path / "model.py": model.encode()}
    for index in range(METHOD_CALLER_FILES + 20):  # `update` written in more files than the bound
        named = "from model import Model\nm = Model()\n" if index % 40 == 0 else ""
        text = f"{named}d = {{}}\nd.update(a=1)\nupdated = 1\n"
        contents[tmp_path / f"m{index}.py"] = text.encode()
    cls = ast.parse(model).body[0]
    assert isinstance(cls, ast.ClassDef)
    own = tmp_path / "model.py"

    def caller_files(built: bool) -> list[Path]:
        evaluator = project_evaluator(tmp_path, contents, lambda path: None)
        if built:
            evaluator.word_index.scans = SCANS_BEFORE_INDEX  # the next name builds the index
            evaluator.word_index.naming(b"Model")
            assert evaluator.word_index.built(b"update") is not None
        else:
            assert evaluator.word_index.built(b"update") is None
        return evaluator.method_caller_files(b"update", cls, own)

    scanned = caller_files(built=False)
    assert scanned == [own, tmp_path / "m0.py", tmp_path / "m40.py", tmp_path / "m80.py"]
    assert caller_files(built=True) == scanned
