"""What a warm run after an edit recomputes, made cheaper without changing an answer (branch
`edit4`): the reach index's `def name` test searched from its literal, the relevance's imports
read once per file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amp_clipfix.analysis import relevance
from amp_clipfix.analysis.reach import defines

TEXTS = [
    b"def item(self):\n",
    b"    def  item (x):\n",
    b"def\titem\n",
    b"undef item\n",  # `def` ends a longer word
    b"_def item\n",
    b"1def item\n",
    b"x.def item",
    b"(def item",
    b"def itemize(self):\n",  # a longer name
    b"def item_(self):\n",
    b"async def item(self):\n",
    b"undef item\ndef item():\n",  # the second `def` is a whole word
    b"undef item undef  item def item",
    b"\xc3def item",  # a byte that is no ASCII word byte: a boundary, as `\b` says
    b"def item\xc3",
    b"def\n\nitem",
    b"de f item",
    b"",
    b"def",
    b"item def",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("name", ["item", "it", "def_", "x"])
def test_defines_is_the_word_boundary_search(text: bytes, name: str) -> None:
    expected = re.search(rb"\bdef\s+" + re.escape(name.encode()) + rb"\b", text) is not None
    assert defines(name, text) is expected


def test_the_relevance_reads_each_core_file_s_imports_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fused relevance (resolve_base.relevant_files) gives the files it gave, and notes the
    modules each core file imports, with one `imported_modules` per core file (it was two:
    one for the imports followed, one for the note)."""
    from amp_clipfix.analysis.recording import Reads, Recording
    from amp_clipfix.analysis.resolve import project_evaluator
    from amp_clipfix.analysis.resolve_base import relevant_files
    from amp_clipfix.analysis.summary import summarise

    files = {
        tmp_path / "pkg" / "__init__.py": b"",
        tmp_path / "pkg" / "opt.py": b"import torch\nfrom pkg import util\n"
        b"def make(p):\n    return torch.optim.AdamW(p, fused=True)\n",
        tmp_path / "pkg" / "util.py": b"import os\n",
        tmp_path / "pkg" / "train.py": b"from pkg.opt import make\nimport pkg.util as u\n",
        tmp_path / "other.py": b"import json\n",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    calls: list[bytes] = []
    original = relevance.imported_modules

    def counted(data: bytes) -> frozenset[str]:
        calls.append(data)
        return original(data)

    monkeypatch.setattr(relevance, "imported_modules", counted)
    monkeypatch.setattr("amp_clipfix.analysis.resolve_base.imported_modules", counted)

    def load(path: Path) -> object:
        return summarise(tmp_path, path, files[path].decode(), data=files[path])

    evaluator = project_evaluator(tmp_path, files, load)
    evaluator.contents = Recording(files, Reads())
    relevant = relevant_files(evaluator)
    pkg = tmp_path / "pkg"
    assert relevant == {pkg / "opt.py", pkg / "train.py", pkg / "util.py", pkg / "__init__.py"}
    rounds, _, modules = evaluator.relevant_core
    assert set(rounds) == {pkg / "opt.py", pkg / "train.py"}
    assert modules == {pkg / "opt.py": {"torch", "pkg"}, pkg / "train.py": {"pkg.opt", "pkg.util"}}
    assert sorted(calls) == sorted(files[path] for path in rounds)
