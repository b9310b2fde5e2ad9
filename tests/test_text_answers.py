"""The caller search's tests of a file's text are computed once per file and word
(analysis/name_texts.py `text_answer`): a function defined under one name in many modules of
one name (icefall's hundred `train.py`, each with its `compute_loss`) asked the same file the
same four questions once per module, 67,000 text searches. Each answer is still noted as its
test each time it is used, so what a query notes is what it noted before."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis import name_texts
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.recording import Reads, Recording
from amp_clipfix.analysis.summary import module_name, summarise

MAKE = "def make(fused):\n    return fused\n"
# Reaches each module's `make` through the module's name, never by importing `make`.
USER = "import a.train as train\n\ntrain.make(True)\n"


def test_a_files_text_is_tested_once_for_many_modules_of_one_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"a/train.py": MAKE, "b/train.py": MAKE, "a/__init__.py": "", "b/__init__.py": ""}
    files["user.py"] = USER
    contents = {}
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        contents[path] = path.read_bytes()
    searched: list[bytes] = []
    original = name_texts.text_reference

    def counted(word: bytes, data: bytes) -> bool:
        searched.append(word)
        return original(word, data)

    monkeypatch.setattr(name_texts, "text_reference", counted)
    reads = Reads()
    evaluator = Evaluator(
        {}, lambda p: summarise(tmp_path, p, p.read_text()), Recording(contents, reads)
    )
    evaluator.index_modules({module_name(tmp_path, path)[0]: path for path in contents})
    user = tmp_path / "user.py"
    for module in ("a", "b"):
        summary = evaluator.summary(tmp_path / module / "train.py")
        assert summary is not None
        make = next(n for n in summary.tree.body if isinstance(n, ast.FunctionDef))
        files = evaluator.caller_files(make, "make", evaluator.ctx(summary, make, None))
        assert user in files  # it may call either module's `make`
    assert searched == [b"make"]  # one search of its text for `.make`, not one per module
    # noted as the test it is, with its result, as each module's question noted it before
    assert reads.tests[str(user)][(("fn", "referenced", b"make"),)] is True
