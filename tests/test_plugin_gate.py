"""The resolution links precision plugins built outside a `Trainer(...)` / `Fabric(...)` call
(resolve_entries.py `plugin_entries`) only where the collector can find such a plugin's site: a
file the collection read that holds one, or a file it did not read that writes a plugin class's
name (plugin_texts.may_call_plugin_class). Elsewhere no `plugins=` list is evaluated and no
unread file is walked for a site; the test is a noted scan, so a warm run after an edit that
writes a plugin into an unread module finds it as a cold run does."""

from __future__ import annotations

from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis import names
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.plugin_texts import PLUGIN_CLASS_WORDS, may_call_plugin_class
from amp_clipfix.models import SiteKind


def test_the_words_are_in_the_name_of_every_plugin_class() -> None:
    plugins = [qualified for qualified in names.LIBRARY if names.plugin_scaler_index(qualified)]
    assert plugins
    for qualified in plugins:
        last = qualified.rsplit(".", 1)[-1].encode("ascii")
        assert any(word in last for word in PLUGIN_CLASS_WORDS), qualified


@pytest.mark.parametrize(
    "text",
    [
        "from lightning.pytorch.plugins import MixedPrecision as P\nP('16-mixed', 'cuda')\n",
        "import lightning.fabric.plugins as p\np.FSDPPrecision('16-mixed')\n",
        "from lightning.fabric import plugins\nplugins.precision.MixedPrecision(x, 'cuda')\n",
        "from pytorch_lightning.plugins import NativeMixedPrecisionPlugin as N\nN(16, 'cuda')\n",
        # a fullwidth `ｉ`: Python reads the name as `MixedPrecision`
        "from lightning.pytorch.plugins import M\uff49xedPrecision as P\nP('16-mixed', 'cuda')\n",
    ],
)
def test_a_text_the_collector_finds_a_plugin_in_passes_the_test(text: str) -> None:
    sites = collect_sites(Path("m.py"), text).sites
    precisions = (SiteKind.FABRIC_PRECISION, SiteKind.TRAINER_PRECISION)
    plugins = [site for site in sites if site.kind in precisions]
    assert plugins and all(site.entry is None for site in plugins)
    assert may_call_plugin_class(None, text.encode("utf-8"))


def test_a_text_with_no_plugin_class_fails_it() -> None:
    text = "from lightning.pytorch.plugins import BitsandbytesPrecision as B\nB('nf4')\n"
    assert not collect_sites(Path("m.py"), text).sites
    assert not may_call_plugin_class(None, text.encode("utf-8"))


PLAIN_FACTORY = """class Plugin:
    pass


def amp_plugin():
    return Plugin()
"""
PLUGIN_FACTORY = """import torch
from lightning.pytorch.plugins import MixedPrecision


def amp_plugin():
    return MixedPrecision("16-mixed", "cuda", torch.amp.GradScaler("cuda"))
"""
TRAIN = """import lightning as L
import torch

from plugins import amp_plugin


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


def main():
    trainer = L.Trainer(max_epochs=1, plugins=[amp_plugin()], gradient_clip_val=1.0)
    trainer.fit(Model())
"""


def test_a_plugin_written_into_an_unread_module_is_found_by_a_warm_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "plugins.py").write_text(PLAIN_FACTORY, encoding="utf-8")
    arguments = ("check", "--lightning-version", "2.6.6")
    before = amp_clipfix(root, *arguments, entry=False)
    assert "ACF002" not in before.stdout.decode()
    (root / "plugins.py").write_text(PLUGIN_FACTORY, encoding="utf-8")
    warm = amp_clipfix(root, *arguments, entry=False)
    cold = amp_clipfix(root, *arguments, "--no-cache", entry=False)
    assert warm == cold
    assert "ACF002" in warm.stdout.decode()
