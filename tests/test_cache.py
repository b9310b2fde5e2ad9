"""The on-disk cache: results are the same with and without it, it ignores itself in git, and
a changed file is read again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def check(project: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main, ["check", "--lightning-version", "2.6.6", *extra, str(project)]
    )
    return result.output


def test_cached_runs_report_the_same_and_see_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    uncached = check(project, "--no-cache")
    assert not (project / ".amp_clipfix_cache").exists()
    first = check(project)
    second = check(project)
    assert "optim.py:5:51: ACF002" in uncached
    assert first == second == uncached
    assert (project / ".amp_clipfix_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    optim = project / "optim.py"
    optim.write_text(optim.read_text().replace("fused=True", "fused=False"))
    assert "0 findings" in check(project)
