"""The resolution follows plugins, precisions, clips, Trainers and fits only where a fused
optimizer's site may be found (`Resolution.may_find_fused`): only ACF001 and ACF002 read the
resolution's sites, and each of their findings holds one."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from amp_clipfix.analysis import resolve as resolve_module
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import Certainty, FileSites, SiteKind
from amp_clipfix.project.version import Target, releases_in
from amp_clipfix.rules import find_findings

SETTINGS = """\
import lightning as L
from optim import make

PRECISION = "16-mixed"
CLIP = 1.0


class Model(L.LightningModule):
    def configure_optimizers(self):
        return make(self.parameters())


trainer = L.Trainer(precision=PRECISION, gradient_clip_val=CLIP)
trainer.fit(Model())
"""

FUSED = """\
import torch


def make(params):
    return torch.optim.AdamW(params, fused=True)
"""

PLAIN = """\
import torch


def make(params):
    return torch.optim.AdamW(params)
"""

NO_CLASS_WORD = """\
import torch

PRECISION = "16-mixed"
trainer = make_trainer(precision=PRECISION)
"""


def resolved(tmp_path: Path, texts: dict[str, str]) -> tuple[dict[Path, FileSites], object]:
    """Each module's sites after the project resolution, and the resolution itself."""
    summaries: dict[Path, Summary | None] = {}
    files: dict[Path, FileSites] = {}
    contents: dict[Path, bytes] = {}
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text)
        contents[path] = text.encode()
        summary = summarise(tmp_path, path, text)
        summaries[path] = summary
        assert summary is not None
        files[path] = collect_sites(path, text, summary.tree)
    made: list[object] = []
    original = resolve_module.Resolution.run

    def run(self: resolve_module.Resolution, trial: bool = False) -> object:
        made.append(self)
        return original(self, trial)

    resolve_module.Resolution.run = run  # type: ignore[method-assign]
    try:
        result = resolve_module.resolve(tmp_path, files, contents, summaries.get)
    finally:
        resolve_module.Resolution.run = original  # type: ignore[method-assign]
    return result, made[0]


def precision_of(files: dict[Path, FileSites]) -> list[tuple[Certainty, str | None]]:
    return [
        (site.certainty, site.value)
        for file in files.values()
        for site in file.sites
        if site.kind is SiteKind.TRAINER_PRECISION
    ]


def test_a_trainers_settings_are_followed_beside_a_fused_optimizer(tmp_path: Path) -> None:
    files, _ = resolved(tmp_path, {"train.py": SETTINGS, "optim.py": FUSED})
    assert (Certainty.KNOWN, "16-mixed") in precision_of(files)
    assert any(fit.module_class is not None for f in files.values() for fit in f.fits)


def test_without_a_fused_optimizer_nothing_is_followed(tmp_path: Path) -> None:
    files, resolution = resolved(tmp_path, {"train.py": SETTINGS, "optim.py": PLAIN})
    # the collector's run-time site, not refined: no rule would read what it refines to
    assert precision_of(files) == [(Certainty.RUNTIME, None)]
    assert not [fit for file in files.values() for fit in file.fits]
    assert resolution.fused_possible is False  # type: ignore[attr-defined]


def test_no_fused_question_where_no_file_writes_a_class_word(tmp_path: Path) -> None:
    """Learning whether a fused optimizer can be built parses the files writing `fused`: it is
    asked only where the module class search would ask it anyway."""
    _, resolution = resolved(tmp_path, {"run.py": NO_CLASS_WORD, "optim.py": PLAIN})
    assert resolution.fused_possible is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("optimizer", [PLAIN, FUSED])
def test_the_findings_are_a_full_resolutions(tmp_path: Path, optimizer: str) -> None:
    """Without a fused optimizer the sites left unfollowed change no finding: ACF001 and
    ACF002 find nothing whether they are followed or not."""
    files, _ = resolved(tmp_path, {"train.py": SETTINGS, "optim.py": optimizer})
    target = Target(releases_in(SpecifierSet("==2.6.6")), "lightning==2.6.6", "x")
    found = find_findings(list(files.values()), target)
    assert bool(found) is (optimizer == FUSED)
