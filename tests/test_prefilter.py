"""The prefilter only saves work: results with and without it are identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

REPO = Path(__file__).resolve().parent.parent
PROJECTS = sorted(
    [path / "input" for path in (REPO / "fixtures").iterdir() if (path / "input").is_dir()]
    + [path / "project" for path in (REPO / "fixtures" / "runtime").glob("*")]
    + [REPO / "examples" / "sample_project"]
)


def outcome(project: Path, prefilter: bool, strategy: Strategy) -> tuple:
    options = Options(strategy, DEFAULT_TARGET, fix=True, prefilter=prefilter)
    result = run([project], options)
    changes = {change.source.path: change.new_data for change in result.changes}
    return result.findings, changes, result.errors


@pytest.mark.parametrize("project", PROJECTS, ids=lambda path: path.parent.name)
def test_prefilter_changes_no_result(project: Path) -> None:
    assert outcome(project, True, Strategy.AUTO) == outcome(project, False, Strategy.AUTO)


def test_prefilter_skips_files_without_a_fused_optimizer(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import lightning as L\ntrainer = L.Trainer(precision='16-mixed', gradient_clip_val=1)\n"
    )
    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert result.files_seen == 2 and result.files_parsed == 0
    assert result.findings == ()


def test_parallel_collection_gives_the_same_results(tmp_path: Path) -> None:
    sample = REPO / "examples" / "sample_project"
    serial = run([sample], Options(Strategy.AUTO, DEFAULT_TARGET, fix=True, jobs=1))
    parallel = run([sample], Options(Strategy.AUTO, DEFAULT_TARGET, fix=True, jobs=2))
    assert serial == parallel


def test_base_class_chain_through_a_file_without_site_words(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text(
        "import lightning as L\n\n\nclass Base(L.LightningModule):\n    pass\n"
    )
    (tmp_path / "mid.py").write_text("from base import Base\n\n\nclass Middle(Base):\n    pass\n")
    (tmp_path / "model.py").write_text(
        "import torch\nfrom mid import Middle\n\n\nclass Model(Middle):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n"
    )
    (tmp_path / "train.py").write_text(
        "import lightning as L\nfrom model import Model\n\n"
        "L.Trainer(precision='16-mixed', gradient_clip_val=1.0).fit(Model())\n"
    )
    with_prefilter = outcome(tmp_path, True, Strategy.AUTO)
    assert [finding.code for finding in with_prefilter[0]] == ["ACF002"]
    assert with_prefilter == outcome(tmp_path, False, Strategy.AUTO)


def test_prefilter_changes_no_result_on_real_lightning_sources(tmp_path: Path) -> None:
    """Real code (Lightning's own core and precision plugins, where every site word abounds)
    plus one project file with a finding, so that every prefilter stage runs."""
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("lightning")
    assert spec is not None and spec.origin, "the test extra installs lightning"
    package = Path(spec.origin).parent
    for part in ("pytorch/core", "pytorch/plugins", "fabric/plugins"):
        shutil.copytree(package / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "examples" / "sample_project" / "model.py", tmp_path / "model.py")
    shutil.copy(REPO / "examples" / "sample_project" / "train_trainer.py", tmp_path / "train.py")
    with_prefilter = outcome(tmp_path, True, Strategy.AUTO)
    assert [finding.code for finding in with_prefilter[0]] == ["ACF002"]
    assert with_prefilter == outcome(tmp_path, False, Strategy.AUTO)


def notebook_json(*cells: str) -> str:
    import json

    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "source": cell}
                for cell in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


@pytest.mark.parametrize(
    ("fused_file", "escaped", "parsed"),
    [(False, False, 0), (True, False, 2), (False, True, 2)],
    ids=["nothing-fused", "fused-module", "escaped-letter"],
)
def test_notebooks_pass_the_raw_prefilter_before_their_json_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fused_file: bool, escaped: bool, parsed: int
) -> None:
    """A notebook is decoded for its code only when some file of the project may write
    `fused` (raw bytes; an escaped letter in the JSON may hide the word)."""
    from amp_clipfix.sources import notebook

    calls: list[Path] = []
    real = notebook.read_notebook

    def counting(source):  # noqa: ANN001, ANN202
        calls.append(source.path)
        return real(source)

    monkeypatch.setattr(notebook, "read_notebook", counting)
    clip = "trainer = L.Trainer(precision='16-mixed', gradient_clip_val=1.0)"
    (tmp_path / "a.ipynb").write_text(notebook_json("import lightning as L", clip))
    optimizer = "import torch\nopt = torch.optim.AdamW([], fused=True)\n"
    escaped_json = notebook_json(optimizer).replace("fused", "\\u0066used")  # still valid JSON
    (tmp_path / "b.ipynb").write_text(
        escaped_json if escaped else notebook_json("import torch\nopt = torch.optim.AdamW([])\n")
    )
    (tmp_path / "train.py").write_text("import lightning as L\n" + clip + "\n")
    if fused_file:
        (tmp_path / "model.py").write_text("import torch\ntorch.optim.AdamW([], fused=True)\n")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert len(set(calls)) == parsed  # notebooks decoded at all (one passing is loaded again)
    assert result.errors == ()
    unfiltered = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET, prefilter=False))
    assert (result.findings, result.errors) == (unfiltered.findings, unfiltered.errors)
