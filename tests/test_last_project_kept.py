"""The last project of a run keeps its analysis to the process's end (freeing its trees costs
CPU and lowers no peak: pipeline.run), also when the configuration hands back another
`Project` object than discovery's (`--tracked-only` does: the files git's index holds). Before,
the check compared the configured object with discovery's list, so the pre-commit hook's
command freed the last (its only) project's analysis: about 10 ms on fairseq."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_memory_release import project

from amp_clipfix.analysis import project_resolve
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.discover import Project
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.records import replace


def released_roots(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots of the projects whose analysis `release_analysis` lets go, in order."""
    released: list[Path] = []
    release = project_resolve.release_analysis

    def watched(collection):  # noqa: ANN001, ANN202
        released.append(next(iter(collection.contents)).parent)
        release(collection)

    monkeypatch.setattr(project_resolve, "release_analysis", watched)
    return released


def copied(found: Project, options: Options) -> tuple[Project, Options]:
    """A configuration that hands back an equal project in a new object, as --tracked-only's."""
    return replace(found, files=tuple(found.files)), options


@pytest.mark.parametrize("configure", [None, copied], ids=["same-object", "new-object"])
def test_only_a_project_another_follows_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configure: object
) -> None:
    released = released_roots(monkeypatch)
    first, second = project(tmp_path / "a"), project(tmp_path / "b")
    options = Options(Strategy.AUTO, DEFAULT_TARGET, configure=configure)  # type: ignore[arg-type]
    result = run([first, second], options)
    assert result.projects == 2
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"] * 2
    assert released == [first.resolve()]  # not the last one, whatever object configured it


def test_a_single_configured_project_is_not_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = released_roots(monkeypatch)
    options = Options(Strategy.AUTO, DEFAULT_TARGET, configure=copied)
    result = run([project(tmp_path / "p")], options)
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"]
    assert released == []
