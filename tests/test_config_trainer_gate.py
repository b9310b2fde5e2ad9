"""ACF009 reports on a config-built Trainer (LightningCLI's, or the one a Hydra config builds)
only for the module classes it is known to fit. Without a LightningCLI (no file names it) the
Trainer fits the classes the configs name (`model: _target_: ...`, in YAML or in an
`OmegaConf.create({...})` document); where none is named, analysis/cli_config.py `cli_trainer`
answers before the configs' trainer settings are read (`yaml_settings`, which composes configs
again: NeMo's 43), and a document whose text holds no key asked and no `_target_` /
`class_path` is not parsed. The output is the same as the whole search's, a config that names
the model is still reported, and an edit that names it runs the search again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from test_incremental import PYPROJECT, edit_line, same_as_cold, write
from test_manual_gate import MODULE

from amp_clipfix.analysis import cli_config
from amp_clipfix.analysis.document_texts import writes_document_call
from amp_clipfix.cli import main
from amp_clipfix.rules import acf009

TRAIN = """\
import hydra
from hydra.utils import instantiate


@hydra.main(config_path="configs", config_name="train", version_base="1.3")
def main(cfg):
    trainer = instantiate(cfg.trainer)
    trainer.fit(instantiate(cfg.model))
"""

YAML = """\
model:
{model}  hidden: 8

trainer:
  _target_: lightning.pytorch.Trainer
  gradient_clip_val: 0.5
"""

NAMED = "  _target_: model.Model\n"

DOCUMENT = """\
from omegaconf import OmegaConf

CONFIG = OmegaConf.create(
    {{"model": {{{model}"hidden": 8}}, "trainer": {{"gradient_clip_val": 0.5}}}}
)
"""

# Documents the search need not parse: no key asked, no model class named.
OTHER = 'from omegaconf import OmegaConf\n\nDATA = OmegaConf.create({"batch_size": 16})\n'


def project(root: Path, config: str) -> Path:
    write(root, "model.py", MODULE)  # `Model` optimizes manually
    write(root, "train.py", TRAIN)
    if config.startswith("from omegaconf"):
        write(root, "config.py", config)
    else:
        write(root, "configs/train.yaml", config)
    write(root, "data.py", OTHER)
    return root


def check(root: Path, monkeypatch: pytest.MonkeyPatch, gate: bool) -> tuple[int, str, int, int]:
    """`check` over the project: its exit code, what it prints, how many times the configs'
    trainer settings were read (`yaml_settings`), and how many documents were yielded from
    files that hold neither a key asked nor `_target_`; without `gate`, `fitted` is off."""
    read: list[object] = []
    settings = cli_config.yaml_settings
    trainer = cli_config.cli_trainer

    def counted(*args: Any) -> None:
        read.append(args)
        settings(*args)

    with monkeypatch.context() as patched:
        patched.setattr(cli_config, "yaml_settings", counted)
        if not gate:
            patched.setattr(
                acf009,
                "cli_trainer",
                lambda facts, keys, needed, fitted: trainer(facts, keys, needed),
            )
        documents: list[str] = []
        listed = cli_config.config_documents

        def listing(facts: Any, words: Any) -> Any:
            for file, document in listed(facts, words):
                documents.append(file.path.name)
                yield file, document

        patched.setattr(cli_config, "config_documents", listing)
        patched.chdir(root)
        arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
        result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, len(read), documents.count("data.py")


@pytest.mark.parametrize(
    "config", [YAML.format(model=""), DOCUMENT.format(model="")], ids=["yaml", "document"]
)
def test_no_model_named_no_settings_read_and_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    root = project(tmp_path, config)

    code, output, read, bystanders = check(root, monkeypatch, gate=True)
    ungated = check(root, monkeypatch, gate=False)

    assert read == 0
    assert ungated[2] == 1  # the settings were read, and gave no finding
    assert (code, output) == ungated[:2]
    assert "ACF009" not in output
    assert bystanders == 0 and ungated[3] == 0  # `data.py` holds no word a document needs


@pytest.mark.parametrize(
    "config",
    [YAML.format(model=NAMED), DOCUMENT.format(model='"_target_": "model.Model", ')],
    ids=["yaml", "document"],
)
def test_a_config_that_names_the_model_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    root = project(tmp_path, config)

    code, output, read, _ = check(root, monkeypatch, gate=True)
    ungated = check(root, monkeypatch, gate=False)

    assert read == 1
    assert (code, output) == ungated[:2]
    assert ": ACF009 " in output and code == 1


def test_a_file_naming_lightningcli_reads_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LightningCLI's module comes from its call: the settings are read first, as before."""
    root = project(tmp_path, YAML.format(model=""))
    write(root, "cli.py", "from lightning.pytorch.cli import LightningCLI\n")

    code, output, read, _ = check(root, monkeypatch, gate=True)

    assert read == 1
    assert (code, output) == check(root, monkeypatch, gate=False)[:2]


def test_an_edit_that_names_the_model_runs_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "project", DOCUMENT.format(model=""))
    write(root, "pyproject.toml", PYPROJECT.format(pin=">=2.0"))
    first = same_as_cold(root)
    assert b"ACF009" not in first
    named = '{"_target_": "model.Model", "hidden"'
    edit_line("config.py", '{"hidden"', named)(root)
    assert b"config.py:4:" in same_as_cold(root)
    edit_line("config.py", named, '{"hidden"')(root)
    assert same_as_cold(root) == first


WORD_BOUNDED = re.compile(rb"\b(?:create|DictConfig)\s*\(\s*(?:\{|dict\s*\()")
PIECES = ["create", "DictConfig", "dict", "Dict", "re", "x", "_", "1", " ", "\n", "\t", "(", "{"]


@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_the_document_call_scan_is_the_word_bounded_pattern(pieces: list[str]) -> None:
    text = "".join(pieces).encode()
    assert writes_document_call(text) is (WORD_BOUNDED.search(text) is not None)
