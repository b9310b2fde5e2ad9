"""The text-level search that keeps the resolution away from files a fused value cannot reach."""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.analysis.relevance import files_naming, fused_relevant_files, subclass_files

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
