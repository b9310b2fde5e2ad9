"""The clipping stage's text test (`may_clip`, asked of every file no stage read) kept by each
file's bytes in the cache (analysis/project_collect.py `clip_test_of`, file_tests.py): after a
cold run, a warm run tests only the files changed since, and gives a cold run's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import project, same_as_cold, write  # noqa: F401 - a fixture

from amp_clipfix.analysis import project_collect
from amp_clipfix.sources.prefilter import may_clip

CLIPPING = """import lightning as L


class Clipper(L.Callback):
    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        trainer.strategy.clip_gradients(optimizer, 1.0)
"""


def test_warm_runs_test_only_the_changed_files_for_clipping(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for i in range(8):
        write(project, f"pkg/plain_{i}.py", f"def plain_{i}(x):\n    return x\n")
    tested: list[bytes] = []

    def counted(data: bytes) -> bool:
        tested.append(data)
        return may_clip(data)

    monkeypatch.setattr(project_collect, "may_clip", counted)
    same_as_cold(project)
    assert len(tested) > 2 * 8  # the cold run and `--no-cache`: every plain file, each
    # each a state of the project no run saw (a state seen before restores its collection)
    for text in (CLIPPING, "def plain_0(y):\n    return y\n", CLIPPING + "# again\n"):
        write(project, "pkg/plain_0.py", text)
        tested.clear()
        warm = amp_clipfix(project, "check", entry=False)
        assert [data.decode() for data in tested] == [text]  # the edited file alone
        tested.clear()
        assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
        assert len(tested) > 8  # without the cache, every file is tested
