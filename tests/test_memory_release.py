"""What a stage no longer needs is let go before the next one runs: once the rules have found
what they find, the project's evaluator (its memos and the values they hold) and the `ast`
trees of the summaries it read are released, so the fixes (and the next project of a run) do
not run on top of the analysis' memory. Checked structurally, with weak references: no sizes,
no timings."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from amp_clipfix.analysis import resolve, summary
from amp_clipfix.fixes import changes
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

FACTORY = """\
import torch


def make_optimizer(params, **options):
    return torch.optim.AdamW(params, lr=1e-3, **options)
"""

MODEL = """\
import lightning as L

from factory import make_optimizer


class Model(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused=True)
"""

TRAIN = """\
import lightning as L

from model import Model

trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""


class Watched:
    """Weak references to every summary, tree and evaluator the analysis makes, and how many
    of them are still alive when the fixes stage starts (and after the run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.summaries: list[weakref.ref[object]] = []
        self.trees: list[tuple[str, weakref.ref[object]]] = []  # with the file's name
        self.evaluators: list[weakref.ref[object]] = []
        self.alive_at_fixes: list[tuple[int, list[str], int]] = []
        summarise, project_evaluator, fix_project = (
            summary.summarise,
            resolve.project_evaluator,
            changes.fix_project,
        )

        def watched_summarise(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
            made = summarise(*arguments, **keywords)
            if made is not None:
                self.summaries.append(weakref.ref(made))
                self.trees.append((made.path.name, weakref.ref(made.tree)))
            return made

        def watched_evaluator(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
            made = project_evaluator(*arguments, **keywords)
            self.evaluators.append(weakref.ref(made))
            return made

        def watched_fixes(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
            self.alive_at_fixes.append(self.alive())
            return fix_project(*arguments, **keywords)

        monkeypatch.setattr(summary, "summarise", watched_summarise)
        monkeypatch.setattr(resolve, "project_evaluator", watched_evaluator)
        monkeypatch.setattr(changes, "fix_project", watched_fixes)

    def alive(self) -> tuple[int, list[str], int]:
        """The summaries alive, the files whose trees are, the evaluators alive."""
        gc.collect()
        return (
            sum(ref() is not None for ref in self.summaries),
            sorted(name for name, ref in self.trees if ref() is not None),
            sum(ref() is not None for ref in self.evaluators),
        )


def project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "factory.py").write_text(FACTORY)
    (folder / "model.py").write_text(MODEL)
    (folder / "train.py").write_text(TRAIN)
    return folder


def test_check_releases_the_trees_and_the_evaluator_before_the_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --format json` (edits made, nothing written): the finding needs the optimizer
    followed through the factory's `**options`, so the evaluator read the three modules; none
    of their summaries or trees, nor the evaluator, is alive when the fixes are made (a memo of
    scopes, reaching.declared_names, kept up to 64 trees alive for the rest of the run)."""
    watched = Watched(monkeypatch)
    result = run([project(tmp_path / "p")], Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True))
    assert [finding.code for finding in result.findings] == ["ACF002"]
    assert result.edits and all(result.edits.values())  # the fixes stage ran, with the edits
    assert len(watched.summaries) >= 2 and watched.evaluators
    assert watched.alive_at_fixes == [(0, [], 0)]
    assert watched.alive() == (0, [], 0)


def test_apply_keeps_the_summaries_for_the_next_round_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply`: a round of fixes reuses the summaries of the files it did not change, so they
    stay while the rounds run, but each round's evaluator goes before its fixes are made, and
    nothing of the analysis outlives the run."""
    watched = Watched(monkeypatch)
    folder = project(tmp_path / "p")
    result = run([folder], Options(Strategy.UNFUSE, DEFAULT_TARGET, fix=True))
    assert [finding.code for finding in result.findings] == ["ACF002"]
    assert [change.source.path.name for change in result.changes] == ["model.py"]
    assert b"fused=False" in result.changes[0].new_data
    assert watched.alive_at_fixes  # the first round's fixes
    first_round = watched.alive_at_fixes[0]
    assert first_round[0] > 0 and first_round[2] == 0  # summaries kept, evaluator gone
    assert watched.alive() == (0, [], 0)


def test_each_project_is_released_before_the_next_is_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two projects in one run: when the second one's fixes are made, the first one's trees
    and evaluator are gone as well as its own."""
    watched = Watched(monkeypatch)
    first, second = project(tmp_path / "a"), project(tmp_path / "b")
    for folder in (first, second):
        (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    result = run([first, second], Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True))
    assert result.projects == 2
    assert [finding.code for finding in result.findings] == ["ACF002", "ACF002"]
    assert len(watched.evaluators) == 2
    assert watched.alive_at_fixes == [(0, [], 0), (0, [], 0)]
