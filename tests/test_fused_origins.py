"""The gate of the module classes' optimizer search (analysis/fused_origins.py): where no `fused`
value can leave the function that writes it, only the methods that write one are evaluated;
anywhere one can, every method is, and the findings are what they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import resolve_optimizers
from amp_clipfix.analysis.fused_origins import fused_origins, project_modules
from amp_clipfix.analysis.summary import module_name, summarise
from amp_clipfix.cli import main

# An optimizer of the project's own whose `fused` goes only into torch's base class.
OWN_OPTIMIZER = """\
import torch
from torch.optim.optimizer import Optimizer


class Adan(Optimizer):
    def __init__(self, params, lr=1e-3, fused: bool = False):
        defaults = dict(lr=lr, fused=fused)
        super().__init__(params, defaults)

    def step(self):
        for group in self.param_groups:
            if group["fused"]:
                pass
"""

MODULE = """\
import lightning as L
import torch

from {factory} import make


class Model(L.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return make(self.parameters())


L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())
"""

# A factory whose `fused` leaves it: the optimizer it returns is fused.
FUSED_FACTORY = """\
import torch


def make(params):
    return torch.optim.AdamW(params, fused=True)
"""

PLAIN_FACTORY = """\
import torch


def make(params):
    return torch.optim.AdamW(params)
"""


def origins_of(sources: dict[str, str]) -> tuple[bool, str, int]:
    root = Path("/project")
    contents = {root / name: text.encode() for name, text in sources.items()}
    summaries = {path: summarise(root, path, data.decode()) for path, data in contents.items()}
    modules = project_modules(module_name(root, path)[0] for path in contents)
    found = fused_origins({}, contents, summaries.get, modules)
    return found.escapes, found.reason, len(found.holders)


def test_a_fused_value_handed_to_a_library_base_stays_in_its_function() -> None:
    assert origins_of({"adan.py": OWN_OPTIMIZER}) == (False, "", 1)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return torch.optim.AdamW(params, fused=True)", "returned"),
        ("self.kw = {'fused': True}", "stored outside"),
        ("kw = dict(fused=True)\n    helper(params, **kw)", "passed to helper"),
        ("kw = {}\n    kw['fused'] = True\n    return kw", "returned"),
    ],
)
def test_a_fused_value_that_leaves_its_function_keeps_every_method(body: str, reason: str) -> None:
    head = "import torch\n\n\ndef helper(*a, **k):\n    pass\n\n\n"
    source = f"{head}def build(self, params):\n    {body}\n"
    escapes, why, _ = origins_of({"build.py": source})
    assert escapes
    assert why.startswith(f"build.py: {reason}")


def test_a_field_named_fused_keeps_every_method() -> None:
    source = (
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Cfg:\n    fused: bool = True\n"
    )
    escapes, why, _ = origins_of({"cfg.py": source})
    assert escapes
    assert "outside a function" in why


def check(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, list[str]]:
    """`check` over a project; what it prints, and the methods the optimizer search evaluated."""
    evaluated: list[str] = []
    search = resolve_optimizers.OptimizerSearch.optimizers_in

    def noted(self: object, function: object, ctx: object):  # type: ignore[no-untyped-def]
        evaluated.append(getattr(function, "name", "?"))
        return search(self, function, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve_optimizers.OptimizerSearch, "optimizers_in", noted)
    monkeypatch.chdir(project)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, evaluated


def test_the_search_skips_the_module_where_no_fused_value_can_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "adan.py").write_text(OWN_OPTIMIZER, "utf-8")
    (tmp_path / "factory.py").write_text(PLAIN_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(MODULE.format(factory="factory"), "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 0, output
    assert "no findings" in output.lower() or "0 findings" in output.lower(), output
    assert "configure_optimizers" not in evaluated


def test_the_search_follows_a_fused_value_out_of_its_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "adan.py").write_text(OWN_OPTIMIZER, "utf-8")
    (tmp_path / "factory.py").write_text(FUSED_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(MODULE.format(factory="factory"), "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "ACF002" in output
    assert "configure_optimizers" in evaluated


# `fused` written where no value can be one (a comment the scan cannot tell from code): the
# module's file is read for origins, holds none, and is one the search may read.
NO_ORIGIN = "# fused: kernels are not used in this project\n"


def classes_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the classes the optimizer search looks at, as it looks at them."""
    looked_at: list[str] = []
    classes = resolve_optimizers.OptimizerSearch.class_optimizers

    def noted(self: object, cls: object) -> None:
        looked_at.append(cls.node.name)  # type: ignore[attr-defined]
        classes(self, cls)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve_optimizers.OptimizerSearch, "class_optimizers", noted)
    return looked_at


def test_no_origin_anywhere_reads_no_module_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `fused` value anywhere (none escapes, no function holds one): no method can give a
    site, so no class is looked at and the module's file is never summarised for it."""
    (tmp_path / "factory.py").write_text(PLAIN_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(NO_ORIGIN + MODULE.format(factory="factory"), "utf-8")
    looked_at = classes_read(monkeypatch)
    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 0, output
    assert looked_at == [] and evaluated == []


def test_a_holder_anywhere_still_reads_the_module_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same project with a function that holds a `fused` value (an optimizer of its own):
    only the holder's methods could give a site, and they are read first; this one builds no
    optimizer (its `fused` goes to the library base), so no module class is read at all
    (tests/test_holder_methods.py: a holder that builds one lets them in again); a fused value
    that escapes is followed as before (the test above)."""
    (tmp_path / "adan.py").write_text(OWN_OPTIMIZER, "utf-8")
    (tmp_path / "factory.py").write_text(PLAIN_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(NO_ORIGIN + MODULE.format(factory="factory"), "utf-8")
    looked_at = classes_read(monkeypatch)
    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 0, output
    assert looked_at == []
    assert "configure_optimizers" not in evaluated
