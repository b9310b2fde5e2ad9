"""The prefilter only saves work: results with and without it are identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.sources.prefilter import (
    holds,
    json_may_contain,
    may_configure_trainer,
    may_need_search,
)
from amp_clipfix.sources.shared_pieces import any_word

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


def test_files_a_rule_search_parses_are_counted(tmp_path: Path) -> None:
    """A finding that only a rule's own search finds (ACF012) still counts its file as parsed;
    a file without any rule's word is not parsed."""
    (tmp_path / "train.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert [finding.code for finding in result.findings] == ["ACF012"]
    assert result.files_seen == 2 and result.files_parsed == 1


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


@pytest.mark.needs("lightning")
def test_prefilter_changes_no_result_on_real_lightning_sources(tmp_path: Path) -> None:
    """Real code (Lightning's own core and precision plugins, where every site word abounds)
    plus one project file with a finding, so that every prefilter stage runs."""
    import importlib.util
    import shutil

    spec = importlib.util.find_spec("lightning")
    assert spec is not None and spec.origin, "the test dependency group installs lightning"
    package = Path(spec.origin).parent
    for part in ("pytorch/core", "pytorch/plugins", "fabric/plugins"):
        shutil.copytree(package / part, tmp_path / part, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "examples" / "sample_project" / "model.py", tmp_path / "model.py")
    shutil.copy(REPO / "examples" / "sample_project" / "train_trainer.py", tmp_path / "train.py")
    with_prefilter = outcome(tmp_path, True, Strategy.AUTO)
    # ACF007 (review): Lightning's own LightningModule.clip_gradients calls
    # `self.fabric.clip_gradients(..., max_norm=...)`, `fabric` a property returning the
    # module's `_fabric` (annotated a Fabric): under an fp16 Fabric an overflow step raises
    assert [finding.code for finding in with_prefilter[0]] == ["ACF002", "ACF007"]
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


SEARCH_GATE_CASES = [
    # (files as (text, is a config), whether a searching rule may find something)
    ([(b"trainer:\n  precision: 16-mixed\n", True), (b'Trainer(precision="bf16")', False)], True),
    (
        [(b"trainer:\n  precision: 16-mixed\n", True), (b'Trainer(precision="16-mixed")', False)],
        False,
    ),
    ([(b"trainer:\n  precision: 'bf16-mixed'  # fast\r\n", True)], False),
    ([(b"trainer:\n  precision: 16\n", True)], True),
    ([(b"trainer:\n  precision: bf16\n", True)], True),
    # not one value on its line, but no `16` / `bf16` token: ACF011 would not compose it
    ([(b"trainer: {precision: 16-mixed}\n", True)], False),
    ([(b"trainer: {precision: 16}\n", True)], True),
    ([(b'p: &p "16"\ntrainer:\n  precision: *p\n', True)], True),  # an alias
    # ACF011 reads only files holding its words (`16` unquoted is not one of them)
    ([(b"p: &p 16\ntrainer:\n  precision: *p\n", True)], False),
    ([(b'trainer:\n  "precisio\\u006e": "16"\n', True), (b"precision", False)], True),
    ([(b"trainer:\n  precision: 16-mixed\n  gradient_clip_val: 1\n", True)], False),
    ([(b"trainer:\n  precision: 16-mixed\n", True), (b"x.manual_backward(loss)", False)], True),
    ([(b'devices = "16"', False)], False),  # no `precision` anywhere: ACF011 never searches
]


@pytest.mark.parametrize(("files", "expected"), SEARCH_GATE_CASES)
def test_the_search_gate_starts_a_search_only_where_an_old_spelling_may_be(
    files: list[tuple[bytes, bool]], expected: bool
) -> None:
    """`precision` alone (set to `16-mixed` in configs and code) imports no rule; an old
    spelling, an alias or an escaped key in a config, or another rule's word does."""
    named = (
        (Path(f"/p/f{n}.{'yaml' if config else 'py'}"), data)
        for n, (data, config) in enumerate(files)
    )
    searched = ((path, data, path.suffix == ".yaml", holds) for path, data in named)
    assert may_need_search(searched, Path("/p")) is expected


def test_a_notebook_gives_the_gate_its_raw_bytes() -> None:
    """A notebook's `"16"` is `\\"16\\"` in its JSON: its raw bytes still count as holding it."""
    notebook = json.dumps({"cells": [{"source": ['L.Trainer(precision="16")']}]}).encode()
    path = Path("/p/a.ipynb")
    assert may_need_search([(path, notebook, False, json_may_contain)], path.parent)
    settled = notebook.replace(b'16\\"', b'16-mixed\\"')
    assert not may_need_search([(path, settled, False, json_may_contain)], path.parent)


def test_a_dashed_precision_everywhere_gives_the_same_result_without_the_search(
    tmp_path: Path,
) -> None:
    """The gate changes no result: a legacy spelling next to the settled ones is still found."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "config.yaml").write_text("trainer:\n  precision: 16-mixed\n")
    (tmp_path / "train.py").write_text(
        'import lightning as L\n\nL.Trainer(precision="bf16-mixed").fit(None)\n'
    )
    options = Options(Strategy.AUTO, DEFAULT_TARGET)
    assert run([tmp_path], options).findings == ()
    (tmp_path / "old.yaml").write_text("trainer:\n  precision: 16\n")
    assert [f.code for f in run([tmp_path], options).findings] == ["ACF011"]


# Words sharing pieces as the searching rules' do (a piece of five bytes or more in several).
SHARING = (b"precision=16", b"precision: bf16", b"clip_grad_norm_", b"gradient_clip_val", b".fit(")


@given(st.lists(st.sampled_from([*SHARING, b"clip", b"precision", b"16", b"x", b" "]), max_size=8))
def test_words_looked_for_through_their_shared_pieces_are_found_as_any_finds_them(
    pieces: list[bytes],
) -> None:
    """The project's word scan tests shared pieces first (`precision`, `clip_`): a text holds a
    word exactly when `any` over the words says so."""
    text = b"".join(pieces)
    assert any_word(SHARING)(text) == any(word in text for word in SHARING)


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        (b"import lightning as L\nmake = L.Trainer\nmake(precision='16-mixed')\n", True),
        (
            b"class Run:\n    trainer_cls: type = pl.Trainer  # the class\n\n"
            b"    def go(self):\n        self.trainer_cls(**self.cfg)\n",
            True,
        ),
        (b"from lightning import Trainer as T\nT(max_epochs=1)\n", True),
        (b"make = L.Trainer\nprint(make)\n", False),  # bound, never called
        (b"make = L.Trainer()\nmake()\n", False),  # a Trainer call without arguments
        (b"make = trainer_factory(L.Trainer)\nmake(precision=16)\n", False),
    ],
)
def test_a_name_bound_to_a_trainer_class_is_read_as_a_trainer(text: bytes, passes: bool) -> None:
    assert may_configure_trainer(text) is passes
