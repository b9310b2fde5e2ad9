"""Issue 35: an edit to a file no search reads reuses every rule's answer. A search that tests
files' texts to rule them out notes each test with its answer (a scan, recording.tested), not a
read of the file, so a file whose answer is unchanged does not run the queries again:
ACF009's search for Python config documents (cli_config.config_documents), the trial
resolution's test for files that may hold a module class, and its test for files writing
`fused` in code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from test_incremental import base_project, computed, edit_line, same_as_cold, spied_queries, write

from amp_clipfix.analysis.fused_origins import written_fused
from amp_clipfix.analysis.recording import Reads, Recording
from amp_clipfix.analysis.resolve_optimizers import DEFINES_SUBCLASS, OptimizerSearch

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


@pytest.mark.parametrize(
    ("text", "may_hold"),
    [
        (b"import lightning\n\n\nclass Settings:\n    width = 1\n", False),
        (b"import lightning\n\n\nclass Model(lightning.LightningModule):\n    pass\n", True),
    ],
)
def test_the_module_class_test_is_noted_as_a_test_not_a_read(text: bytes, may_hold: bool) -> None:
    path = Path("/project/pkg/settings.py")
    reads = Reads()
    search = SimpleNamespace(ev=SimpleNamespace(contents=Recording({path: text}, reads)))
    assert OptimizerSearch.may_hold_module_class(search, path) is may_hold  # type: ignore[arg-type]
    assert reads.files == set()
    assert reads.tests == {str(path): {DEFINES_SUBCLASS: may_hold}}


def test_the_files_writing_fused_in_code_are_one_noted_scan() -> None:
    """A file writing `fused` in a comment only is left out by the scan, not read."""
    code, comment = Path("/project/code.py"), Path("/project/comment.py")
    texts = {code: b"opt = make(fused=True)\n", comment: b"x = 1  # fused=True is faster\n"}
    reads = Reads()
    assert list(written_fused(Recording(texts, reads))) == [code]
    assert reads.files == set()
    assert [sorted(found) for found in reads.scans.values()] == [[str(code)]]
