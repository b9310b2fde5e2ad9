"""ACF009's config documents (analysis/cli_config.py `config_documents`): a file is parsed only
where its text may write a document that gives the search something (`may_give`: a trainer key
asked, or a model named: a `model` key and a `_target_` / `class_path` given a string), and
whether a call makes a config document is asked only of the mappings that do (`gives`). The
text test says yes wherever the tree names a model, however the document is spelled; the
report is that of reading every file holding `_target_`."""

from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import Any

import pytest
from spied import check_counting_parses
from test_config_trainer_gate import NAMED, TRAIN, YAML
from test_incremental import write
from test_manual_gate import MODULE

from amp_clipfix.analysis import cli_config, document_texts, python_configs
from amp_clipfix.analysis.document_texts import TARGET_WORDS, may_give
from amp_clipfix.analysis.facts import ProjectFacts

GAPS = ["", " ", "\n    ", "  # a note: {'model': 1}\n    ", " \\\n    ", "\t"]
MODEL_KEYS = ['"model"', "'model'", "'''model'''", 'r"model"', '("model")', '( "model" )']
TARGET_KEYS = ['"_target_"', "'class_path'", '("_target_")', '"""class_path"""']
TARGET_VALUES = [
    '"pkg.Model"',
    "r'pkg.Model'",
    '("pkg.Model")',
    '(\n  "pkg.Model"\n)',
    '"pkg" ".Model"',
    'u"pkg.Model"',
    '"""pkg.Model"""',
    "Model",  # a name: no model named
    "f'{pkg}.Model'",  # not a constant: no model named
]


def document(rng: random.Random) -> str:
    """A config document with a `model:` mapping, spelled one way or another."""
    gap = [rng.choice(GAPS) for _ in range(6)]
    value = rng.choice(TARGET_VALUES)
    if rng.random() < 0.4:
        keyword = rng.choice(["_target_", "class_path"])
        inner = f"dict({gap[0]}{keyword}{gap[1]}={gap[2]}{value}, hidden=8)"
    else:
        key = rng.choice(TARGET_KEYS)
        inner = f"{{{gap[0]}{key}{gap[1]}:{gap[2]}{value}, 'hidden': 8}}"
    if rng.random() < 0.2:
        inner = f"[{inner}]"
    if rng.random() < 0.4:
        model = rng.choice(["model", "ｍodel"])  # a keyword: Python reads it NFKC
        outer = f"dict({gap[3]}{model}{gap[4]}={gap[5]}{inner})"
    else:
        outer = f"{{{gap[3]}{rng.choice(MODEL_KEYS)}{gap[4]}:{gap[5]}{inner}, 'seed': 1}}"
    return f"from omegaconf import OmegaConf\n\nCONFIG = OmegaConf.create(\n    {outer}\n)\n"


def names_model(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call) and node.args and python_configs.model_targets(node.args[0])
        for node in ast.walk(tree)
    )


def test_a_text_whose_documents_name_a_model_may_give() -> None:
    rng = random.Random(35)
    named = 0
    for _ in range(3000):
        text = document(rng)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if names_model(tree):
            named += 1
            assert may_give(text.encode("utf-8"), TARGET_WORDS), text
    assert named > 1000


@pytest.mark.parametrize(
    "text",
    [
        # NeMo's kind: targets of datasets and modules, `model` only as a variable
        "model = build()\ncfg = DictConfig({'_target_': 'pkg.Dataset', 'batch_size': 8})\n",
        "cfg = DictConfig({'model': {'_target_': Model}})\n",  # a name, not a string
        "cfg = DictConfig({'modelling': {'_target_': 'pkg.Dataset'}})\n",
    ],
)
def test_a_text_that_names_no_model_does_not(text: str) -> None:
    tree = ast.parse(text)
    assert not names_model(tree)
    assert not may_give(text.encode("utf-8"), TARGET_WORDS)


def test_a_trainer_key_asked_may_give() -> None:
    text = b"cfg = DictConfig({'trainer': {'gradient_clip_val': 0.5}})\n"
    assert may_give(text, (b"gradient_clip_val", *TARGET_WORDS))
    assert not may_give(text, TARGET_WORDS)


DATA = """\
from omegaconf import OmegaConf

DATA = OmegaConf.create({"_target_": "data.Dataset", "batch_size": 16})
"""

CONFIG = """\
from omegaconf import OmegaConf

DATA = OmegaConf.create({"data": {"_target_": "data.Dataset"}})
CONFIG = OmegaConf.create(
    {"model": {"_target_": "model.Model"}, "trainer": {"gradient_clip_val": 0.5}}
)
"""


def project(root: Path) -> Path:
    write(root, "model.py", MODULE)  # `Model` optimizes manually
    write(root, "train.py", TRAIN)
    write(root, "configs/train.yaml", YAML.format(model=NAMED))
    write(root, "data.py", DATA)
    write(root, "config.py", CONFIG)
    return root


def test_a_document_that_names_no_model_is_not_parsed_and_the_report_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    asked: list[tuple[str, int]] = []
    qualified_names = ProjectFacts.qualified_names

    def counted(self: ProjectFacts, file: Any, node: ast.AST) -> frozenset[str]:
        asked.append((file.path.name, getattr(node, "lineno", 0)))
        return qualified_names(self, file, node)

    with monkeypatch.context() as patched:
        patched.setattr(ProjectFacts, "qualified_names", counted)
        code, output, parsed = check_counting_parses(root, patched)
    with monkeypatch.context() as patched:
        patched.setattr(document_texts, "may_give", lambda data, words: True)
        patched.setattr(cli_config, "gives", lambda document, words: True)
        every = check_counting_parses(root, patched)

    assert (code, output) == every[:2]
    assert ": ACF009 " in output and code == 1
    assert "data.py" not in parsed and "data.py" in every[2]
    assert ("config.py", 4) in asked  # the document naming the model
    assert ("config.py", 3) not in asked  # the one naming a dataset only
