"""The module-class optimizer search (resolve_optimizers.module_optimizers) when no fused origin
leaves its function: only the methods that hold one can give a site, and each is read in its
own module whatever class's MRO it is found in. So when none of them builds an optimizer the
search lists no class at all, and the modules that only define module classes are not parsed;
when one does, the search runs as before. The sites are the same either way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from amp_clipfix.analysis import resolve_optimizers
from amp_clipfix.analysis.resolve import resolve
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import FileSites

# An optimizer class of the project whose `fused` stays in its `__init__` (handed to the library
# base): a holder that builds no optimizer (NeMo's `Adan`).
OPTIMIZER = """
    import torch


    class MyOpt(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, fused=None):
            defaults = dict(lr=lr, fused=fused)
            super().__init__(params, defaults)
    """

# A mixin whose hook builds torch's AdamW with `fused` from an attribute: a holder that does.
MIXIN = """
    import torch


    class FusedMixin:
        use_fused = True

        def configure_optimizers(self):
            fused = self.use_fused
            return torch.optim.AdamW(self.parameters(), lr=0.1, fused=fused)
    """


def module(index: int, bases: str) -> str:
    return f"""
        import lightning as L
        from opt import MyOpt
        from mixin import FusedMixin


        class Model{index}({bases}):
            def training_step(self, batch, batch_idx):
                return self(batch).sum()

            def make_optimizer(self):
                return MyOpt(self.parameters())
        """


def run(
    tmp_path: Path, files: dict[str, str], gate: bool
) -> tuple[dict[Path, FileSites], set[str]]:
    """The resolution's sites (no file collected: every optimizer is the search's) and the
    modules it parsed; `gate` False: every class is listed, as before the holders were read."""
    contents = {}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        contents[path] = path.read_bytes()
    parsed: set[str] = set()

    def load(path: Path) -> Summary | None:
        parsed.add(path.name)
        return summarise(tmp_path, path, path.read_text())

    with pytest.MonkeyPatch.context() as patch:
        if not gate:
            search = resolve_optimizers.OptimizerSearch
            patch.setattr(search, "holders_build", lambda self: True, raising=False)
        found = resolve(tmp_path, {}, contents, load)
    return found, parsed


def described(found: dict[Path, FileSites]) -> list[tuple[str, int, str, list[str]]]:
    return sorted(
        (
            path.name,
            site.span.line,
            site.detail,
            sorted(f"{user.path.name}:{user.name}" for user in site.users),
        )
        for path, file in found.items()
        for site in file.sites
    )


MODULES = {f"model{i}.py": module(i, "L.LightningModule") for i in range(8)}


def test_no_holder_builds_an_optimizer_so_no_module_class_is_listed(tmp_path: Path) -> None:
    files = {"opt.py": OPTIMIZER, "mixin.py": "class FusedMixin:\n    pass\n", **MODULES}
    (tmp_path / "gated").mkdir()
    (tmp_path / "whole").mkdir()
    found, parsed = run(tmp_path / "gated", files, gate=True)
    whole, parsed_whole = run(tmp_path / "whole", files, gate=False)
    assert described(found) == described(whole) == []
    assert set(MODULES) <= parsed_whole  # listed to test each class against LightningModule
    assert not parsed & set(MODULES)  # now never parsed
    assert "opt.py" in parsed  # the holder's module is


@pytest.mark.parametrize("mixed_in", [True, False])
def test_a_holder_that_builds_one_keeps_the_search(tmp_path: Path, mixed_in: bool) -> None:
    """A module class that takes the mixin gets the site; the gate changes nothing."""
    bases = "FusedMixin, L.LightningModule" if mixed_in else "L.LightningModule"
    files = {
        "opt.py": OPTIMIZER,
        "mixin.py": MIXIN,
        **{f"model{i}.py": module(i, bases) for i in range(3)},
    }
    (tmp_path / "gated").mkdir()
    (tmp_path / "whole").mkdir()
    found, parsed = run(tmp_path / "gated", files, gate=True)
    whole, _ = run(tmp_path / "whole", files, gate=False)
    rows = described(found)
    assert rows == described(whole)
    if mixed_in:
        users = [f"model{i}.py:Model{i}" for i in range(3)]
        assert rows == [("mixin.py", 6, "torch.optim.AdamW(fused=True)", users)]
        assert {"model0.py", "model1.py", "model2.py"} <= parsed
    else:
        assert rows == []
