"""A property's setter is run by an assignment to the attribute, never by a call: no call of
the project can be its caller, so the search for its callers reads no file. On NeMo, `ModelPT`'s
`@cfg.setter def cfg(self, cfg): self._cfg = cfg` made every read of `self._cfg` look for the
callers of `cfg` in each of the ~100 files that write the word `cfg` (a Hydra script's
`main(cfg)`), and each tree was kept to the run's end (~40 MB). The report is the same: the
setter's parameter stays decided at run time, as when the search found nothing.

Checked by which files are summarised (their `ast` trees made), with the collector off as the
command runs, and by the report; a setter of anything that is not the builtin `property`
bound above it is searched as before."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_memory_release import collector_off

from amp_clipfix.analysis import summary
from amp_clipfix.analysis.descriptors import property_accessor
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

PROPERTY = """\
    @property
    def cfg(self):
        return self._cfg

    @cfg.setter
    def cfg(self, cfg):
        self._cfg = cfg
"""
# Not a property: a project object whose `setter` may return the function as it is (a
# registry), so a call by the name may run it.
REGISTRY = """\
    cfg = registry.slot("cfg")

    @cfg.setter
    def cfg(self, cfg):
        self._cfg = cfg
"""
# A property, then the name rebound: what `@cfg.setter` reads is no longer the property.
REBOUND = PROPERTY.replace("    @cfg.setter", "    cfg = registry.slot('cfg')\n\n    @cfg.setter")
MODEL = """\
import lightning as L
import torch

from registry import registry


class Model(L.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self._cfg = cfg

{members}
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=self._cfg)
"""
TRAIN = """\
import lightning as L

from model import Model

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model(True))
"""
REGISTRY_MODULE = (
    "class Registry:\n    def slot(self, name):\n        return name\n\n\nregistry = Registry()\n"
)
# Files that may call a method `cfg` (they write it as an attribute): where a caller's search
# must look.
USER = "def show(model):\n    print(model.cfg)\n\n\nshow(None)\n"
USERS = ["user1.py", "user2.py", "user3.py"]
# The finding: the setter's parameter, like any whose callers are none, is decided at run time.
FOUND = "ACF002 torch.optim.AdamW(fused=self._cfg) RUNTIME"


def project(folder: Path, members: str) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (folder / "model.py").write_text(MODEL.format(members=members))
    (folder / "train.py").write_text(TRAIN)
    (folder / "registry.py").write_text(REGISTRY_MODULE)
    for name in USERS:
        (folder / name).write_text(USER)
    return folder


def checked(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], set[str]]:
    """The report's findings (code, fused value) and the files whose trees were made."""
    made: set[str] = set()
    original = summary.summarise

    def watched(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
        made.add(arguments[1].name)
        return original(*arguments, **keywords)

    monkeypatch.setattr(summary, "summarise", watched)
    with collector_off():
        result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    found = [f"{f.code} {f.sites[0].detail} {f.sites[0].certainty.name}" for f in result.findings]
    return found, made


def test_a_setters_callers_are_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, made = checked(project(tmp_path / "p", PROPERTY), monkeypatch)
    assert found == [FOUND]
    assert not made & set(USERS)


@pytest.mark.parametrize("members", [REGISTRY, REBOUND], ids=["registry", "rebound"])
def test_a_setter_of_anything_else_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: str
) -> None:
    found, made = checked(project(tmp_path / "p", members), monkeypatch)
    assert found == [FOUND]
    assert made >= set(USERS)  # the files that write `.cfg` were read for its callers


DELETER = "\n    @cfg.deleter\n    def cfg(self):\n        pass\n"
CASES = {
    "property": (PROPERTY, True),
    "deleter of a setter": (
        PROPERTY + "\n    @cfg.deleter\n    def cfg(self):\n        pass\n",
        True,
    ),
    "registry": (REGISTRY, False),
    "rebound": (REBOUND, False),
    "two decorators": (
        PROPERTY.replace("    @cfg.setter", "    @cfg.setter\n    @staticmethod"),
        False,
    ),
    "property shadowed": ("    property = staticmethod\n" + PROPERTY, False),
    "an import above": ("    from functools import cached_property as cfg\n" + PROPERTY, False),
    "cached_property": (PROPERTY.replace("@property", "@functools.cached_property"), False),
}


@pytest.mark.parametrize("case", CASES)
def test_property_accessor(tmp_path: Path, case: str) -> None:
    members, expected = CASES[case]
    text = "import functools\n\n\nclass Model:\n" + members
    module = summarise(tmp_path, tmp_path / "m.py", text)
    assert module is not None
    cls = module.tree.body[-1]
    assert isinstance(cls, ast.ClassDef)
    last = [s for s in cls.body if isinstance(s, ast.FunctionDef)][-1]
    assert property_accessor(module, cls, last) is expected
