"""A warm run that reuses a rule's search loads none of the documents that search read until a
fix asks for one (collection.ReadFiles): the text report needs none, a report with edits (JSON)
loads those holding a finding. Every warm run prints the bytes of a cold `--no-cache` run."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import HELPER, base_project, edit_line, same_as_cold, write

from amp_clipfix import pipeline
from amp_clipfix.analysis.collection import Collection

# A clip ACF004's search reads (it writes `clip_grad_norm_`) with no GradScaler: no finding.
PLAIN = """import torch


def clip(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, bool]]:
    """Per run, each document the searches read: whether it was loaded by the run's end."""
    runs: list[dict[str, bool]] = []
    process = pipeline.process

    def spied(collection: Collection, *rest: object, **named: object) -> object:
        result = process(collection, *rest, **named)  # type: ignore[arg-type]
        runs.append({path.name: read is not None for path, read in collection.searched.items()})
        return result

    monkeypatch.setattr(pipeline, "process", spied)
    return runs


def test_a_reused_search_loads_a_document_only_when_a_fix_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loaded: list[dict[str, bool]]
) -> None:
    root = base_project(tmp_path, monkeypatch, "True")
    write(root, "plain.py", PLAIN)
    write(root, "pkg/helper_1.py", HELPER.format(i=1))
    cold = same_as_cold(root)
    assert loaded[0] == {"scaled.py": True, "plain.py": True}  # the search read them
    assert b"scaled.py" in cold and b"plain.py" not in cold
    edit = edit_line("pkg/helper_1.py", "return x + 1", "return x + 11")  # no query read it
    edit(root)
    loaded.clear()
    same_as_cold(root)
    assert loaded[0] == {"scaled.py": False, "plain.py": False}  # warm: the answers reused
    edit_line("pkg/helper_1.py", "return x + 11", "return x + 12")(root)
    loaded.clear()
    text = same_as_cold(root, "--format", "json")
    assert b'"path": "scaled.py"' in text and b'"edits"' in text
    assert loaded[0] == {"scaled.py": True, "plain.py": False}  # its finding's edits need it
    edit_line("pkg/helper_1.py", "return x + 12", "return x + 13")(root)
    loaded.clear()
    patch = same_as_cold(root, "--diff")  # the fix made from the document loaded on use
    assert b"+++ b/scaled.py" in patch
    assert loaded[0]["plain.py"] is False
