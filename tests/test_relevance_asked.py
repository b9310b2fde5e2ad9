"""When the project-wide text relevance (resolve_base.relevant_files) is made. When no fused
optimizer can be built (no collected optimizer site, no fused origin leaves its function, and
no function holding one builds an optimizer: OptimizerSearch.may_build_fused), the searches
that ask which files a fused value reaches (module classes, Fabric clips, plugin calls) get
none and the relevance is not made for them; a question about no file never makes it. A holder
that is a plain function counts as a method does."""

from __future__ import annotations

import textwrap
from pathlib import Path

from amp_clipfix.analysis.resolve import project_evaluator, resolve
from amp_clipfix.analysis.resolve_base import relevant_among
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import FileSites

# `fused` handed to the library base inside `__init__`: a holder that builds no optimizer.
OPTIMIZER = """
    import torch


    class MyOpt(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, fused=None):
            defaults = dict(lr=lr, fused=fused)
            super().__init__(params, defaults)
    """

# A module class whose hook builds AdamW with `fused` from an attribute: a holder that does.
FUSED_MODULE = """
    import torch
    import lightning as L


    class Model(L.LightningModule):
        use_fused = True

        def configure_optimizers(self):
            fused = self.use_fused
            return torch.optim.AdamW(self.parameters(), lr=0.1, fused=fused)
    """

PLAIN_MODULE = """
    import lightning as L
    from opt import MyOpt


    class Plain(L.LightningModule):
        def configure_optimizers(self):
            return MyOpt(self.parameters())
    """


def resolved(tmp_path: Path, files: dict[str, str]) -> tuple[dict[Path, FileSites], bool]:
    """The resolution's sites (nothing collected), and whether it made the relevance."""
    contents = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        contents[path] = path.read_bytes()

    def load(path: Path) -> Summary | None:
        return summarise(tmp_path, path, path.read_text())

    evaluator = project_evaluator(tmp_path, contents, load)
    found = resolve(tmp_path, {}, contents, load, evaluator)
    return found, evaluator.relevant is not None


def sites(found: dict[Path, FileSites]) -> list[tuple[str, int, str]]:
    return sorted(
        (path.name, site.span.line, site.detail)
        for path, file in found.items()
        for site in file.sites
    )


def test_a_closed_gate_never_makes_the_relevance(tmp_path: Path) -> None:
    found, made = resolved(tmp_path, {"opt.py": OPTIMIZER, "plain.py": PLAIN_MODULE})
    assert sites(found) == []
    assert not made


def test_an_open_gate_makes_it_and_finds_the_site(tmp_path: Path) -> None:
    files = {"opt.py": OPTIMIZER, "plain.py": PLAIN_MODULE, "model.py": FUSED_MODULE}
    found, made = resolved(tmp_path, files)
    assert sites(found) == [("model.py", 7, "torch.optim.AdamW(fused=True)")]
    assert made


def test_a_question_about_no_file_is_answered_without_it(tmp_path: Path) -> None:
    path = tmp_path / "opt.py"
    path.write_text(textwrap.dedent(OPTIMIZER))
    contents = {path: path.read_bytes()}
    evaluator = project_evaluator(
        tmp_path, contents, lambda p: summarise(tmp_path, p, p.read_text())
    )
    assert relevant_among(evaluator, set()) == set()
    assert evaluator.relevant is None
    assert relevant_among(evaluator, {path}) == {path}
    assert evaluator.relevant is not None


# A Trainer given a precision plugin built in another module: the plugin search reads the
# call's module only when a fused value may reach it.
PLUGIN = """
    from lightning.pytorch.plugins import MixedPrecision


    def make_plugin():
        return MixedPrecision("16-mixed", "cuda")
    """

TRAIN = """
    import lightning as L
    from plugin import make_plugin


    def main(model):
        trainer = L.Trainer(plugins=[make_plugin()], gradient_clip_val=1.0)
        trainer.fit(model)
    """

# A Fabric loop whose `fused` stays in the function that builds the optimizer (the optimizer
# is passed nowhere): a holder that is no method, whose optimizer the Fabric search finds.
FABRIC_LOOP = """
    import torch
    from lightning.fabric import Fabric


    def train(model):
        fabric = Fabric(precision="16-mixed")
        optimizer = torch.optim.AdamW(model.parameters(), fused=True)
        fabric.clip_gradients(model, None, max_norm=1.0)
        optimizer.step()
    """


def test_no_fused_optimizer_so_no_plugin_call_is_read_for_it(tmp_path: Path) -> None:
    files = {"opt.py": OPTIMIZER, "plugin.py": PLUGIN, "train.py": TRAIN}
    found, made = resolved(tmp_path, files)
    assert sites(found) == []
    assert not made


def test_a_holder_that_is_no_method_keeps_the_fabric_search(tmp_path: Path) -> None:
    found, made = resolved(tmp_path, {"opt.py": OPTIMIZER, "loop.py": FABRIC_LOOP})
    assert ("loop.py", 8, "torch.optim.AdamW(fused=True)") in sites(found)
    assert made
