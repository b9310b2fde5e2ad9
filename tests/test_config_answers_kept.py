"""ACF011's YAML configs answered by their bytes (candidate_answers.answers_by_text): when the
query is computed again after an edit to a Python candidate, a config whose bytes are as they
were is not read again, and the output is a cold run's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_candidate_answers import edit
from test_incremental import same_as_cold, write

from amp_clipfix.rules import acf011

CANDIDATE = """import lightning as L

trainer = L.Trainer(precision=16)
"""
PYPROJECT = """[project]
name = "demo"
version = "0"
dependencies = ["lightning>=2.0"]
"""
# a LightningCLI config whose precision is rewritten; a second one holding a word ACF011 lists
# (`precision: 16`) and no old spelling
CONFIG = """trainer:
  precision: 16
  max_epochs: 3
"""
OTHER = """trainer:
  precision: 16-mixed
"""


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "train.py", CANDIDATE)
    write(root, "configs/a.yaml", CONFIG)
    write(root, "configs/b.yaml", OTHER)
    write(root, "pyproject.toml", PYPROJECT)
    return root


@pytest.fixture
def composed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The configs ACF011 answered by reading them, run after run (by file name): each
    `same_as_cold` runs the warm command, then a `--no-cache` one."""
    names: list[str] = []
    findings = acf011.config_findings

    def spied(facts: acf011.ProjectFacts, path: Path, fixable: bool) -> object:
        names.append(path.name)
        return findings(facts, path, fixable)

    monkeypatch.setattr(acf011, "config_findings", spied)
    yield names


def cold_then(project: Path, composed: list[str]) -> bytes:
    first = same_as_cold(project)
    assert composed == ["a.yaml", "b.yaml", "a.yaml", "b.yaml"]
    composed.clear()
    return first


def test_a_python_edit_reads_no_config_again(project: Path, composed: list[str]) -> None:
    first = cold_then(project, composed)
    assert b"configs/a.yaml:2" in first and b"train.py:3" in first
    edit(project, "train.py", "precision=16", 'precision="bf16"')
    warm = same_as_cold(project)
    assert b"configs/a.yaml:2" in warm and b"train.py:3" in warm
    assert composed == ["a.yaml", "b.yaml"]  # the `--no-cache` run alone


def test_a_config_whose_sites_stay_is_read_again_when_its_bytes_change(
    project: Path, composed: list[str]
) -> None:
    """`gpus` beside the precision (Lightning 2.0 removed it: no rewrite) leaves the config's
    sites where they were; its answer is another, and only that config is read again."""
    cold_then(project, composed)
    edit(project, "train.py", "precision=16", 'precision="bf16"')
    edit(project, "configs/a.yaml", "  max_epochs: 3", "  gpus: 2")
    warm = same_as_cold(project)
    assert b"`gpus`" in warm
    assert composed == ["a.yaml", "a.yaml", "b.yaml"]


def test_a_config_edited_into_an_old_spelling_is_found(project: Path, composed: list[str]) -> None:
    cold_then(project, composed)
    edit(project, "train.py", "precision=16", 'precision="bf16"')
    edit(project, "configs/b.yaml", "precision: 16-mixed", "precision: bf16")
    warm = same_as_cold(project)
    assert b"configs/b.yaml:2" in warm


def test_a_pin_that_admits_1x_answers_every_config_again(
    project: Path, composed: list[str]
) -> None:
    """The answer depends on the pins too (no rewrite where pytorch-lightning 1.x may run)."""
    first = cold_then(project, composed)
    assert b"(2 fixable with --strategy auto)" in first
    edit(project, "pyproject.toml", '"lightning>=2.0"', '"pytorch-lightning>=1.9"')
    warm = same_as_cold(project)
    assert b"(0 fixable with --strategy auto)" in warm and b"configs/a.yaml:2" in warm
    assert composed == ["a.yaml", "b.yaml", "a.yaml", "b.yaml"]


@pytest.mark.parametrize(
    ("name", "old", "new", "shows"),
    [
        ("configs/a.yaml", "precision: 16", "precision: 32", b"configs/a.yaml:2"),
        ("configs/b.yaml", "precision: 16-mixed", "precision: bf16", b"configs/b.yaml:2"),
    ],
    ids=["a-reused-config-loses-its-finding", "a-reused-config-gains-one"],
)
def test_a_config_edited_alone_after_a_run_that_reused_it(
    project: Path, composed: list[str], name: str, old: str, new: str, shows: bytes
) -> None:
    """The run that reused both configs' answers still notes their bytes: an edit to one of
    them alone, next, is seen by the warm run as by a cold one."""
    first = cold_then(project, composed)
    edit(project, "train.py", "precision=16", 'precision="bf16"')
    same_as_cold(project)
    assert composed == ["a.yaml", "b.yaml"]  # the `--no-cache` run alone
    composed.clear()
    edit(project, name, old, new)
    warm = same_as_cold(project)
    assert (shows in warm) != (shows in first)
