"""What a stage no longer needs is let go before the next one runs. Once the rules have found
what they find, the project's evaluator (its memos and the values they hold) goes before the
fixes are made; once a project is done and another follows in the same run, everything its
analysis held (the summaries and their `ast` trees, the parsed files, the bytes) goes before
the next is collected, with the run's garbage collector off as the command has it (so no cycle
may keep it). Checked structurally, with weak references: no sizes, no timings."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
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
# A Fabric loop that clips with torch after `backward` (ACF006): a rule with its own search
# reads it through the project's facts (project_resolve.project_facts).
LOOP = """\
import torch
from lightning import Fabric


def step(model, optimizer, loss):
    fabric = Fabric(precision="16-mixed")
    fabric.backward(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""
FILES = ["factory.py", "loop.py", "model.py", "train.py"]


@contextmanager
def collector_off() -> Iterator[None]:
    """The garbage collector off, as the command runs (running.run_with): only reference
    counts free anything, so a cycle would keep what it holds."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Watched:
    """Weak references to every summary, tree and evaluator the analysis makes, and how many
    of them are still alive when the fixes stage starts (and after the run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.summaries: list[weakref.ref[object]] = []
        self.trees: list[tuple[str, weakref.ref[object]]] = []  # with "project/file"
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
                name = f"{made.path.parent.name}/{made.path.name}"
                self.trees.append((name, weakref.ref(made.tree)))
            return made

        def watched_evaluator(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
            made = project_evaluator(*arguments, **keywords)
            self.evaluators.append(weakref.ref(made))
            return made

        def watched_fixes(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
            self.alive_at_fixes.append(self.alive(collect=False))
            return fix_project(*arguments, **keywords)

        monkeypatch.setattr(summary, "summarise", watched_summarise)
        monkeypatch.setattr(resolve, "project_evaluator", watched_evaluator)
        monkeypatch.setattr(changes, "fix_project", watched_fixes)

    def alive(self, collect: bool = True) -> tuple[int, list[str], int]:
        """The summaries alive, the files whose trees are, the evaluators alive."""
        if collect:
            gc.collect()
        return (
            sum(ref() is not None for ref in self.summaries),
            sorted(name for name, ref in self.trees if ref() is not None),
            sum(ref() is not None for ref in self.evaluators),
        )


def project(folder: Path) -> Path:
    folder.mkdir()
    for name, text in zip(FILES, (FACTORY, LOOP, MODEL, TRAIN)):
        (folder / name).write_text(text)
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # a project of its own
    return folder


def test_the_evaluator_goes_before_the_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --format json` (edits made, nothing written): the finding needs the optimizer
    followed through the factory's `**options`, so the evaluator read the modules. When
    the fixes are made, the evaluator is gone; the trees stay with the summaries (a single
    project's are left to the process's end); nothing of it outlives the run."""
    watched = Watched(monkeypatch)
    with collector_off():
        options = Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True)
        result = run([project(tmp_path / "p")], options)
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"]
    assert result.edits and all(result.edits.values())  # the fixes stage ran, with the edits
    assert watched.alive_at_fixes == [(4, [f"p/{name}" for name in FILES], 0)]
    assert watched.alive() == (0, [], 0)  # a memo of scopes (reaching.py) held one tree


def test_apply_keeps_the_summaries_for_the_next_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply`: a round of fixes reuses the summaries of the files it did not change, so they
    stay while the rounds run, but each round's evaluator goes before its fixes are made."""
    watched = Watched(monkeypatch)
    with collector_off():
        result = run([project(tmp_path / "p")], Options(Strategy.UNFUSE, DEFAULT_TARGET, fix=True))
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"]
    assert "model.py" in [change.source.path.name for change in result.changes]
    assert watched.alive_at_fixes[0] == (4, [f"p/{name}" for name in FILES], 0)
    assert watched.alive() == (0, [], 0)


@pytest.mark.parametrize("fix", [False, True], ids=["check", "apply"])
def test_a_project_is_released_before_the_next_is_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fix: bool
) -> None:
    """Two projects in one run, with the garbage collector off: when the second one's fixes
    are made, nothing of the first one's analysis is alive, only the second one's trees."""
    watched = Watched(monkeypatch)
    first, second = project(tmp_path / "a"), project(tmp_path / "b")
    strategy = Strategy.UNFUSE if fix else Strategy.AUTO
    with collector_off():
        result = run([first, second], Options(strategy, DEFAULT_TARGET, fix=fix, with_edits=True))
    assert result.projects == 2
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"] * 2
    assert len(watched.evaluators) >= 2
    second_fixes = [alive for alive in watched.alive_at_fixes if alive[1][0].startswith("b/")]
    assert second_fixes[0] == (4, [f"b/{name}" for name in FILES], 0)
