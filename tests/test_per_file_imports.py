"""The stored text tests and values a run asks of every file (collection.prefiltered,
Cache.values) import their module on the run's first ask alone: an import statement run for
each file (NeMo: 3,300 of them a hook command) cost ~4-8 K instructions each (the module
found, asked for `__path__`, that AttributeError formatted)."""

from __future__ import annotations

import builtins
from collections import Counter
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import project, same_as_cold, write  # noqa: F401 - a fixture

PER_FILE = ("amp_clipfix.analysis.file_tests", "amp_clipfix.analysis.file_values")


def test_a_warm_run_imports_the_per_file_modules_once_an_ask(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for i in range(30):
        write(project, f"pkg/plain_{i}.py", f"def plain_{i}(x):\n    return x\n")
    same_as_cold(project)
    write(project, "pkg/plain_0.py", "def plain_0(y):\n    return y\n")
    imported: Counter[str] = Counter()
    real = builtins.__import__

    def counted(name: str, *arguments: object, **keywords: object) -> object:
        if name in PER_FILE:
            imported[name] += 1
        return real(name, *arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", counted)
    warm = amp_clipfix(project, "check", entry=False)
    monkeypatch.undo()
    assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
    assert imported["amp_clipfix.analysis.file_tests"] >= 1  # the prefilters are asked
    assert max(imported.values()) <= 6, imported  # not one a file: 36 files
