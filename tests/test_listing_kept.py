"""ACF011's listing of its candidates (word_holders.holders: the files holding its words, each
tested by its text test) is kept with its query's entry (candidate_answers.Kept.listing): a
warm run that computes the query again tests only the files whose bytes changed since, and
takes the earlier listing's answer for the rest. Every warm output is a cold `--no-cache`
run's bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_candidate_answers import PYPROJECT, edit
from test_incremental import computed, same_as_cold, spied_queries, write

from amp_clipfix.analysis import calls

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

TRAINER = """import lightning as L

trainer = L.Trainer(precision=16, max_epochs={epochs})
"""
# holds ACF011's word ("16") and no Trainer: its test refuses it
REFUSED = """SIZES = ["16", "32"]
"""
CANDIDATES = ["a_one.py", "b_two.py", "c_three.py"]


@pytest.fixture
def project(cached_root: Path) -> Path:
    for epochs, name in enumerate(CANDIDATES, 1):
        write(cached_root, name, TRAINER.format(epochs=epochs))
    write(cached_root, "d_sizes.py", REFUSED)
    write(cached_root, "pyproject.toml", PYPROJECT)
    return cached_root


@pytest.fixture
def tested(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files ACF011's text test (a `CallTest` of `precision`) was asked of."""
    names: list[str] = []
    real = calls.CallTest.__call__

    def counted(self: calls.CallTest, path: Path, data: bytes) -> bool:
        if self.keywords is not None and "precision" in self.keywords.names:
            names.append(path.name)
        return real(self, path, data)

    monkeypatch.setattr(calls.CallTest, "__call__", counted)
    yield names


def warm(project: Path, tested: list[str]) -> bytes:
    """The warm run alone counted, then its output against a `--no-cache` run's."""
    tested.clear()
    run = amp_clipfix(project, "check", entry=False)
    counted = list(tested)
    assert same_as_cold(project) == run.stdout
    tested[:] = counted
    return run.stdout


def test_an_edited_candidate_alone_is_tested_again(
    project: Path, asked: list[tuple[str, bool]], tested: list[str]
) -> None:
    same_as_cold(project)
    asked.clear()
    edit(project, "b_two.py", "max_epochs=2", "max_epochs=5")
    out = warm(project, tested)
    assert all(f"{name}:3".encode() in out for name in CANDIDATES)
    assert "rule ACF011" in computed(asked), asked
    # by the check of the query's entry and by the listing: not the other candidates, nor
    # d_sizes.py (which holds the word)
    assert set(tested) == {"b_two.py"}, tested


@pytest.mark.parametrize(
    ("name", "old", "new", "found"),
    [
        ("d_sizes.py", "SIZES", "import lightning as L\nL.Trainer(precision='16')\nSIZES", True),
        ("b_two.py", "precision=16", 'precision="16-mixed"', False),  # no old spelling now
        ("b_two.py", "import lightning as L", "import torch as L", False),  # no Trainer now
    ],
)
def test_a_file_that_joins_or_leaves_the_list_is_found_as_a_cold_run_finds(
    project: Path, tested: list[str], name: str, old: str, new: str, found: bool
) -> None:
    same_as_cold(project)
    edit(project, name, old, new)
    out = warm(project, tested)
    assert (f"{name}:".encode() in out) is found
    assert set(tested) <= {name}, tested  # no file whose bytes are as they were


def test_a_new_file_lists_every_candidate_again(project: Path, tested: list[str]) -> None:
    """Another list of files: the earlier listing is not used (every holder is tested)."""
    same_as_cold(project)
    write(project, "e_new.py", TRAINER.format(epochs=9))
    out = warm(project, tested)
    assert b"e_new.py:3" in out
    assert sorted(tested) == [*CANDIDATES, "d_sizes.py", "e_new.py"], tested
