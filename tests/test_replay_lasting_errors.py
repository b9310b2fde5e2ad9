"""A `check` that ends with exit 2 only because of errors the same files give again (a file
that does not parse: analysis/project_collect.is_lasting, the errors the analysis cache keeps)
is noted and replayed like one that ends with 0 or 1. Any other error (a file that cannot be
read as text, a parsing process that died) still runs the check again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_replay import mark_records, records

from amp_clipfix import run_notes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BROKEN = "import torch\n\nopt = torch.optim.AdamW(params, fused=True\n"  # no `)`


def check(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    variables = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", *arguments],
        cwd=project,
        env=variables,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", root)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "broken.py").write_text(BROKEN, encoding="utf-8")
    return root


@pytest.mark.parametrize("arguments", [["."], ["--format", "json", "."]], ids=["text", "json"])
def test_a_check_whose_only_error_is_a_parse_error_is_replayed(
    project: Path, arguments: list[str]
) -> None:
    first = check(project, *arguments)
    assert first.returncode == 2 and "broken.py" in first.stdout + first.stderr
    assert len(records(project)) == 1
    second = check(project, *arguments)
    assert (second.stdout, second.stderr, second.returncode) == (
        first.stdout,
        first.stderr,
        first.returncode,
    )
    mark_records(project)
    third = check(project, *arguments)
    assert (third.stdout, third.returncode) == ("replayed\n", 2)


def test_mending_the_file_runs_the_check_again(project: Path) -> None:
    check(project, ".")
    mark_records(project)
    (project / "broken.py").write_text(BROKEN + ")\n", encoding="utf-8")
    mended = check(project, ".")
    assert mended.stdout != "replayed\n"
    assert (mended.stdout, mended.returncode) == (
        check(project, "--no-cache", ".").stdout,
        check(project, "--no-cache", ".").returncode,
    )
    assert mended.returncode == 1


def test_a_read_error_beside_it_is_never_noted(project: Path) -> None:
    (project / "binary.py").write_bytes(b"x = 1\n\x00\n")
    assert check(project, ".").returncode == 2
    assert records(project) == []


def test_which_exit_codes_may_be_noted() -> None:
    run_notes.reset()
    try:
        assert not run_notes.may_note(0)  # nothing allowed it
        run_notes.allow()
        assert [run_notes.may_note(code) for code in (0, 1, 2, 3)] == [True, True, False, False]
        run_notes.allow(lasting_errors=True)
        assert [run_notes.may_note(code) for code in (0, 1, 2, 3)] == [True, True, True, False]
        run_notes.refuse()
        assert [run_notes.may_note(code) for code in (0, 1, 2)] == [False, False, False]
    finally:
        run_notes.reset()
