"""What a cold `check` of a small project imports (issue 35: a 25-file project at most 6x
ruff): a project in which no file may build a fused optimizer has nothing to parse, so the
parsing module (analysis/parse_pool.py: the process pool, the per-file collection) is not
imported; a project with such a file still parses it and reports its finding. Nor does
it import the stored text tests (analysis/recording.py), which no resolution asks there, or
the prefilter's call tests (sources/call_texts.py), which no text there holds the words for.
"""

from __future__ import annotations

from pathlib import Path

from test_small_check_costs import run, small_project

PARSING_MODULE = "amp_clipfix.analysis.parse_pool"
CALL_TEXTS_MODULE = "amp_clipfix.sources.call_texts"  # the prefilter's call tests


def test_a_project_with_nothing_to_parse_does_not_import_the_parser(tmp_path: Path) -> None:
    noted, report = run(small_project(tmp_path / "project"), tmp_path)
    summary = report["summary"]
    assert isinstance(summary, dict)
    assert (summary["files"], summary["findings"], summary["errors"]) == (4, 0, 0)
    assert "amp_clipfix.analysis.project_collect" in noted["modules"]  # the files were read
    assert PARSING_MODULE not in noted["modules"]
    assert CALL_TEXTS_MODULE not in noted["modules"]  # no text passed a call test's words


def test_a_project_with_a_fused_optimizer_still_parses_it(tmp_path: Path) -> None:
    root = small_project(tmp_path / "project")
    (root / "src" / "model.py").write_text(
        "import torch\nfrom lightning.pytorch import LightningModule, Trainer\n\n\n"
        "class Model(LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n\n\n"
        'trainer = Trainer(precision="16-mixed", gradient_clip_val=1.0)\n'
    )
    noted, report = run(root, tmp_path, codes=(1,))
    findings = report["findings"]
    assert isinstance(findings, list)
    assert [finding["code"] for finding in findings] == ["ACF002"]
    assert PARSING_MODULE in noted["modules"]
    assert CALL_TEXTS_MODULE in noted["modules"]


RECORDING_MODULE = "amp_clipfix.analysis.recording"


def test_a_project_with_nothing_to_parse_does_not_import_the_stored_text_tests(
    tmp_path: Path,
) -> None:
    """The collection registers no text test of its own: the plugin class test lives in
    analysis/plugin_texts.py, imported by the resolution and by a later run's query check."""
    noted, _ = run(small_project(tmp_path / "project"), tmp_path)
    assert "amp_clipfix.analysis.collection" in noted["modules"]
    assert RECORDING_MODULE not in noted["modules"]
    assert "amp_clipfix.analysis.plugin_texts" not in noted["modules"]


def test_the_plugin_class_test_is_registered_where_its_home_is_imported() -> None:
    from amp_clipfix.analysis import recording

    test = recording.predicate("may_call_plugin_class")
    assert test(None, b"from lightning.pytorch.plugins import MixedPrecision\n")
    assert not test(None, b"from lightning.pytorch import Trainer\n")
