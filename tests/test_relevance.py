"""The text-level search that keeps the resolution away from files a fused value cannot reach."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amp_clipfix.analysis.relevance import (
    CLASS_WITH_BASES,
    WordSearch,
    class_text,
    files_naming,
    fused_relevant_files,
    subclass_files,
)

FACTORY = (
    b"from torch.optim import AdamW\n"
    b"\n"
    b"def build_optimizer(params):\n"
    b"    return AdamW(params, fused=True)\n"
)
MIXIN = (
    b"from factory import build_optimizer\n"
    b"\n"
    b"class OptimizerMixin:\n"
    b"    def configure_optimizers(self):\n"
    b"        return build_optimizer(self.parameters())\n"
)
MODEL = (
    b"import lightning as L\n"
    b"from mixins import OptimizerMixin\n"
    b"\n"
    b"class Model(OptimizerMixin, L.LightningModule):\n"
    b"    pass\n"
)
UNRELATED = (
    b"import lightning as L\n"
    b"\n"
    b"class Other(L.LightningModule):\n"
    b"    def configure_optimizers(self):\n"
    b"        return None\n"
)
MAIN = (
    b"from functools import partial\n"
    b"from torch.optim import AdamW\n"
    b"from models.net import Net\n"
    b"\n"
    b"Net(partial(AdamW, fused=True))\n"
)
NET = b"class Net:\n    def __init__(self, factory):\n        self.factory = factory\n"


def project(**files: bytes) -> dict[Path, bytes]:
    return {Path(f"{name}.py"): data for name, data in files.items()}


def test_users_of_names_defined_beside_fused_are_relevant_and_unrelated_files_are_not() -> None:
    contents = project(factory=FACTORY, mixins=MIXIN, model=MODEL, other=UNRELATED)
    modules = {path.stem: [path] for path in contents}

    relevant = fused_relevant_files(contents, modules)

    assert relevant == {Path("factory.py"), Path("mixins.py"), Path("model.py")}


def test_modules_imported_where_fused_is_written_are_relevant() -> None:
    contents = {Path("main.py"): MAIN, Path("models/net.py"): NET, Path("other.py"): UNRELATED}
    modules = {"main": [Path("main.py")], "models.net": [Path("models/net.py")]}

    assert fused_relevant_files(contents, modules) == {Path("main.py"), Path("models/net.py")}


def test_subclasses_are_found_through_project_classes() -> None:
    contents = project(
        base=b"from lightning import Trainer\n\nclass MyTrainer(Trainer):\n    pass\n",
        sub=b"from base import MyTrainer\n\nclass Tuned(\n    MyTrainer,\n):\n    pass\n",
        other=b"class Trainerish(object):\n    pass\n",
    )

    assert subclass_files(contents, b"Trainer") == {Path("base.py"), Path("sub.py")}


def test_files_naming_a_class_include_users_of_a_factory_beside_it() -> None:
    contents = project(
        models=b"class Model:\n    pass\n\ndef make_model():\n    return Model()\n",
        train=b"from models import make_model\ntrainer.fit(make_model())\n",
        other=b"trainer.fit(Other())\n",
    )

    assert files_naming(contents, {"Model"}) == {Path("models.py"), Path("train.py")}


SETTINGS_IN_INIT = re.compile(rb"\A(?=[\s\S]*__init__)(?=[\s\S]*\*\*)")
TRAINERS = (
    b"from lightning import Trainer\n"
    b"\n"
    b"def test_plain():\n"
    b"    class Named(Trainer):\n"
    b"        def __init__(self, name):\n"
    b"            super().__init__()\n"
    b"    return Named\n"
    b"\n"
    b"def helper(**kwargs):\n"  # `**` after the class: not the class's text
    b"    return kwargs\n"
)
SPREADING = (
    b"from lightning import Trainer\n"
    b"\n"
    b"class Spread(Trainer):\n"
    b"    def __init__(self, **kwargs):\n"
    b"        super().__init__(**kwargs)\n"
)
CUT_IN_A_STRING = (
    b"from lightning import Trainer\n"
    b"\n"
    b"class Quoted(Trainer):\n"
    b'    DOC = """\n'
    b"a line in column 0 inside the string\n"
    b'"""\n'
    b"    def __init__(self, **kwargs):\n"
    b"        super().__init__(**kwargs)\n"
)


def test_only_subclasses_whose_own_text_matches_count_with_a_body_pattern() -> None:
    contents = project(trainers=TRAINERS, spreading=SPREADING, cut=CUT_IN_A_STRING)
    assert subclass_files(contents, b"Trainer") == set(contents)
    found = subclass_files(contents, b"Trainer", SETTINGS_IN_INIT)
    assert found == {Path("spreading.py"), Path("cut.py")}


def test_class_text_ends_at_the_next_line_as_shallow_as_the_class() -> None:
    match = CLASS_WITH_BASES.search(TRAINERS)
    assert match is not None
    text = class_text(TRAINERS, match)
    assert text.startswith(b"    class Named(Trainer):") and text.endswith(b"super().__init__()\n")


def test_class_text_cut_inside_a_string_runs_to_the_end_of_the_file() -> None:
    match = CLASS_WITH_BASES.search(CUT_IN_A_STRING)
    assert match is not None
    assert class_text(CUT_IN_A_STRING, match) == CUT_IN_A_STRING[match.start() :]


@pytest.mark.parametrize("count", [1, 40, 41, 300, 301])
def test_a_word_search_finds_whole_words_only_whatever_its_size(count: int) -> None:
    words = {b"build_optimizer", *(f"name_{index}".encode() for index in range(count - 1))}
    search = WordSearch(words)
    assert search.search(b"x = build_optimizer(params)\n")
    assert not search.search(b"x = rebuild_optimizers(params)  # build_optimizerX\n")
    assert not search.search(b"nothing here\n")
