"""What a warm run after an edit pays for besides what the edit changed (issue 35, branch
`hook2`): a searching rule's module is imported only when its search runs, so a run that reuses
every search's answer imports none (the checks of its stored answer import the modules that
register their tests' predicates themselves); the checks of a run test a changed file once
per test. The output is a cold run's, byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import FACTORY, SCALED, TRAIN
from test_incremental import MODULE as MODULE_OF

from amp_clipfix.analysis import query_checks
from amp_clipfix.analysis.recording import Test

SRC = Path(__file__).resolve().parent.parent / "src"

MODULE = MODULE_OF.format(fused="True")
HELPER = "def helper_{i}(x):\n    return x + {i}\n"
PYPROJECT = """[project]
name = "demo"
version = "0"
dependencies = ["lightning>=2.0", "torch>=2.4"]
"""
SEARCHING = "amp_clipfix.rules.acf004"  # the plain-torch scaled clip's rule: it searches


def project(root: Path) -> Path:
    """A fused factory its caller makes fused (the resolution's queries), a scaled clip ACF004
    reports, and helpers no search reads (tests/test_incremental.py's project)."""
    files = {"pkg/__init__.py": "", "pkg/factory.py": FACTORY, "pkg/module.py": MODULE}
    files.update({"train.py": TRAIN, "scaled.py": SCALED, "pyproject.toml": PYPROJECT})
    files.update({f"pkg/helper_{i}.py": HELPER.format(i=i) for i in range(4)})
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run(root: Path, home: Path, *arguments: str) -> tuple[set[str], bytes, int]:
    """The modules `amp-clipfix check ARGUMENTS` imported (`-X importtime`), its stdout and
    exit code; the user's cache folder is `home`."""
    environment = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(home)}
    environment.pop("AMP_CLIPFIX_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "amp_clipfix", "check", *arguments],
        cwd=root,
        env=environment,
        capture_output=True,
        check=False,
    )
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    modules = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    return modules, done.stdout, done.returncode


def test_a_warm_run_that_reuses_every_search_imports_no_searching_rule(tmp_path: Path) -> None:
    root, home = project(tmp_path / "project"), tmp_path / "user-cache"
    first, cold_output, code = run(root, home, "--format", "json", ".")
    assert code == 1 and b"ACF004" in cold_output
    assert SEARCHING in first  # a cold run searches
    (root / "pkg/helper_1.py").write_text(HELPER.format(i=11))  # a file no search reads
    warm, output, code = run(root, home, "--format", "json", ".")
    _, cold, cold_code = run(root, home, "--no-cache", "--format", "json", ".")
    assert (output, code) == (cold, cold_code)
    assert b"ACF004" in output
    assert SEARCHING not in warm
    assert "amp_clipfix.rules.acf001" in warm  # the rules without a search run every time


def test_a_warm_run_whose_search_runs_again_imports_its_rule(tmp_path: Path) -> None:
    root, home = project(tmp_path / "project"), tmp_path / "user-cache"
    run(root, home, "--format", "json", ".")
    (root / "scaled.py").write_text("# moved\n" + SCALED)  # the file the search reads
    warm, output, code = run(root, home, "--format", "json", ".")
    _, cold, cold_code = run(root, home, "--no-cache", "--format", "json", ".")
    assert (output, code) == (cold, cold_code)
    assert b'"line": 9' in output  # the finding moved with its line
    assert SEARCHING in warm


def test_a_changed_file_is_tested_once_a_run_by_the_checks_of_the_stored_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each query's entry holds the tests of the queries before it (they share what they
    read): the checks of a run test a changed file once per test, not once per entry."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "project")
    first = amp_clipfix(root, "check", "--format", "json", entry=False)
    tested: list[tuple[object, Path | None]] = []
    name = "passes_now" if hasattr(query_checks, "passes_now") else "passes"
    original = getattr(query_checks, name)

    def counted(test: Test, data: bytes, path: Path | None = None) -> bool:
        tested.append((test, path))
        return original(test, data, path)

    monkeypatch.setattr(query_checks, name, counted)
    for i in (12, 13):
        (root / "pkg/helper_1.py").write_text(HELPER.format(i=1).replace("+ 1", f"+ {i}"))
        warm = amp_clipfix(root, "check", "--format", "json", entry=False)
        cold = amp_clipfix(root, "check", "--no-cache", "--format", "json", entry=False)
        assert warm == cold and warm.stdout == first.stdout
    assert tested  # the checks did test the changed file
    assert len(tested) == len(set(tested)) * 2  # once per test and run: two runs
