"""Issue 35: an edit to a file no search reads reuses every rule's answer. ACF009 looks for the
Python config documents a Hydra Trainer may be built from (cli_config.config_documents); it
tests each file's text with a scan (a text test noted with its answer), not by reading every
file, so a file whose answer is unchanged does not run the rules again."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import base_project, computed, edit_line, same_as_cold, spied_queries, write

asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored

# A module that optimizes manually, so ACF009 searches the configs for the Trainer it trains.
MANUAL = """import lightning as L


class Manual(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
"""

DOCUMENT = """from omegaconf import OmegaConf

config = OmegaConf.create({"trainer": {"gradient_clip_val": 0.5}})
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = base_project(tmp_path, monkeypatch, "True")
    write(root, "pkg/manual.py", MANUAL)
    write(root, "pkg/unrelated.py", "SIZE = 1\n")
    return root


def test_an_edit_to_a_file_no_search_reads_reuses_every_rule(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    first = same_as_cold(project)
    asked.clear()
    edit_line("pkg/unrelated.py", "SIZE = 1", "SIZE = 2")(project)
    assert same_as_cold(project) == first
    assert not [name for name in computed(asked) if name.startswith("rule ")], asked


def test_a_file_that_starts_writing_a_config_document_runs_the_search_again(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    same_as_cold(project)
    asked.clear()
    write(project, "pkg/unrelated.py", DOCUMENT)
    same_as_cold(project)
    assert "rule ACF009" in computed(asked), asked
