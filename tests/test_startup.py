"""A run pays only for what it uses: a `check` with nothing to find imports no analysis.

The prefilter (sources/prefilter.py) decides from the raw text whether any file can take part in
a finding; until one passes, nothing but the standard library, packaging and the package's
floor, discovery and source adapters is imported; not click either, for a command line that
quick.py reads. The modules a run imported are read from `python -X importtime` (every import
the interpreter performed, on stderr), so no hook in the product is needed and a lazy import
that stops being lazy shows up here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Modules whose import means the run parsed, analysed, fixed or drew something.
HEAVY_PREFIXES = ("libcst", "rich", "ruamel", "amp_clipfix.rules", "amp_clipfix.fixes")
# The analysis, except the tables of names the YAML adapter reads (no work done at import).
LIGHT_ANALYSIS = frozenset(
    {
        "amp_clipfix.analysis",
        "amp_clipfix.analysis.names",
        "amp_clipfix.analysis.suppression",
        "amp_clipfix.analysis.cache",  # the per-file cache: pickle and hashes, no analysis
        # Collecting a project: reading, the prefilter stages, a process pool; the parser, the
        # summaries and the resolution are imported inside them, only when a file passes.
        "amp_clipfix.analysis.collection",
        "amp_clipfix.analysis.parse_pool",
        "amp_clipfix.analysis.project_collect",
        "amp_clipfix.analysis.project_resolve",
        # The memoised queries' store and what it records (hashes, no analysis): a first run
        # with the cache stores its answers there.
        "amp_clipfix.analysis.queries",
        "amp_clipfix.analysis.query_entries",  # its entries' records
        "amp_clipfix.analysis.recording",
        "amp_clipfix.analysis.file_tests",  # the prefilters' results by the files' bytes
        "amp_clipfix.analysis.gate_texts",  # the searching rules' gates' text tests
        # What a query's computation leaves, and the exception that analyses a project again
        # with the catch-up (records only): the pipeline catches it around every project.
        "amp_clipfix.analysis.certificate",
    }
)

# No `.fit(`: rules with a search of their own look for it (and a few other words) without a
# fused optimizer, so a project that writes it passes the prefilter for them.
TRAIN = """\
import lightning as L
import torch

from model import Model

trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0)
trainer.validate(Model())
"""
MODEL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
"""
CONFIG = "trainer:\n  precision: 16-mixed\n  gradient_clip_val: 0.5\n"


def notebook(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": code.splitlines(True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def project(root: Path, fused: bool = False) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (root / "train.py").write_text(TRAIN)
    model = MODEL.replace("lr=1e-3", "lr=1e-3, fused=True") if fused else MODEL
    (root / "model.py").write_text(model)
    (root / "config.yaml").write_text(CONFIG)
    (root / "explore.ipynb").write_text(notebook(TRAIN))
    for index in range(5):
        (root / f"util_{index}.py").write_text(f"def helper_{index}(x):\n    return x + {index}\n")
    return root


def imported_modules(
    root: Path, *arguments: str, cache: bool = False
) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules `amp-clipfix ARGUMENTS` imported, from `-X importtime`."""
    environment = {**os.environ, "PYTHONPATH": str(SRC), "AMP_CLIPFIX_NO_CACHE": "1"}
    if cache:
        del environment["AMP_CLIPFIX_NO_CACHE"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "amp_clipfix", *arguments],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, done


def heavy(modules: set[str]) -> set[str]:
    return {
        name
        for name in modules
        if name.split(".")[0] in {prefix.split(".")[0] for prefix in HEAVY_PREFIXES[:3]}
        or name.startswith(HEAVY_PREFIXES[3:])
        or (name.startswith("amp_clipfix.analysis") and name not in LIGHT_ANALYSIS)
    }


@pytest.mark.parametrize("output_format", ["text", "json", "github"])
def test_a_check_with_nothing_to_find_imports_no_analysis(
    tmp_path: Path, output_format: str
) -> None:
    modules, done = imported_modules(project(tmp_path), "check", "--format", output_format, ".")
    assert done.returncode == 0, done.stderr[-2000:]
    if output_format == "text":
        assert "0 findings" in done.stdout
    assert "amp_clipfix.sources.prefilter" in modules  # the run did reach the prefilter
    assert heavy(modules) == set()
    # quick.py read the command line: neither click nor its command line was imported
    assert "amp_clipfix.quick" in modules
    assert not {"click", "amp_clipfix.cli"} & modules


# What a `check` with nothing to find does not import (records.py, kinds.py): dataclasses (which
# imports inspect), ast, the models of sites and findings, the project resolution, apply's
# writing, the hashes of the cache and the replay, and json (a notebook the prefilter drops is
# never decoded).
NOT_ON_THE_FLOOR = {
    "dataclasses",
    "inspect",
    "ast",
    "amp_clipfix.models",
    "amp_clipfix.analysis.project_resolve",
    "amp_clipfix.writing",  # apply's diffs, questions and writes
    "hashlib",
    "json",
}


def test_a_check_with_nothing_to_find_imports_no_dataclasses_models_hashes_or_json(
    tmp_path: Path,
) -> None:
    modules, done = imported_modules(project(tmp_path), "check", ".")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 findings" in done.stdout
    assert "amp_clipfix.sources.prefilter" in modules
    assert NOT_ON_THE_FLOOR & modules == set()
    assert "tomllib" in modules  # the project's pyproject.toml is read


def test_without_a_pyproject_no_toml_is_read(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "pyproject.toml").unlink()
    modules, done = imported_modules(root, "check", ".")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 findings" in done.stdout
    assert (NOT_ON_THE_FLOOR | {"tomllib"}) & modules == set()


def test_with_the_cache_the_first_check_imports_no_analysis_and_the_replay_no_click(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    first, done = imported_modules(root, "check", ".", cache=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert heavy(first) == set()
    assert "click" not in first
    assert {"dataclasses", "amp_clipfix.models", "json"} & first == set()
    second, replayed = imported_modules(root, "check", ".", cache=True)
    assert replayed.stdout == done.stdout and replayed.returncode == 0
    assert "click" not in second and "amp_clipfix.pipeline" not in second


def test_a_finding_does_import_the_analysis(tmp_path: Path) -> None:
    """The same project with a fused optimizer: the test above can see the analysis imported
    (and libcst only for `apply`, which fixes a file)."""
    root = project(tmp_path, fused=True)
    modules, done = imported_modules(root, "check", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "ACF002" in done.stdout
    assert {"amp_clipfix.analysis.resolve", "amp_clipfix.rules"} <= modules
    assert not any(name.startswith(("libcst", "rich")) for name in modules)
    modules, done = imported_modules(root, "apply", "--dry-run", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "libcst" in modules and not any(name.startswith("rich") for name in modules)
