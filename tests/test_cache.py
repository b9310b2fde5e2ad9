"""The on-disk cache: results are the same with and without it, it ignores itself in git, and
a changed file is read again."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix import pipeline
from amp_clipfix.cache_layout import version_folder
from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def check(project: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main, ["check", "--lightning-version", "2.6.6", *extra, str(project)]
    )
    return result.output


def test_cached_runs_report_the_same_and_see_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    uncached = check(project, "--no-cache")
    assert not (project / ".amp_clipfix_cache").exists()
    first = check(project)
    second = check(project)
    assert "optim.py:5:51: ACF002" in uncached
    assert first == second == uncached
    assert (project / ".amp_clipfix_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    optim = project / "optim.py"
    optim.write_text(optim.read_text().replace("fused=True", "fused=False"))
    assert "0 findings" in check(project)


def test_a_second_run_reads_every_entry_the_first_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project entries are keyed by the sites' values, not by how pickle lays them out: a
    second run (whose sites come from the cache) finds the resolution the first one stored."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "p"
    shutil.copytree(
        FIXTURES / "trainer_callback_clip_value_from_constructor_unfuse" / "input", project
    )
    (project / "other.py").write_text(
        "import lightning as L\n\n\nclass Plain(L.LightningModule):\n"
        "    def on_before_optimizer_step(self, optimizer):\n"
        "        self.clip_gradients(optimizer, gradient_clip_val=1.0)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(project)
    cache = project / ".amp_clipfix_cache"

    first = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])
    entries = sorted(path.name for path in cache.rglob("*") if path.is_file())
    second = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])

    assert first.output == second.output and "ACF002" in first.output
    assert sorted(path.name for path in cache.rglob("*") if path.is_file()) == entries


def test_an_unchanged_project_is_not_collected_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run takes the whole collection from the cache: no stage, search, parse or
    resolution runs, and the findings and the errors of unparsable files are those of the first."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    (project / "broken.py").write_text("def broken(:\n    AdamW(p, fused=True)\n")
    runner = CliRunner()
    first = runner.invoke(main, ["check", "--lightning-version", "2.6.6", str(project)])

    def collect_stages(*args: object) -> None:
        raise AssertionError("collected again")

    monkeypatch.setattr(pipeline, "collect_stages", collect_stages)
    second = runner.invoke(main, ["check", "--lightning-version", "2.6.6", str(project)])
    assert second.exit_code == first.exit_code == 2
    assert second.output == first.output
    assert "optim.py:5:51: ACF002" in second.output and "broken.py:1:" in second.output


def short_string(text: str) -> bytes:
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE


class RunsACommand:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


@pytest.mark.parametrize("route", ["os.system", "a name reached through an own module"])
def test_entries_a_repository_brings_never_run_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """The cache folder is inside the project, so a pull request can commit entries to it: an
    entry that names anything but amp-clipfix's data is a miss, never a call."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    uncached = check(project, "--no-cache")
    check(project)
    marker = tmp_path / "ran"
    if route == "os.system":
        planted = pickle.dumps(RunsACommand(f"touch {marker}"))
    else:  # protocol 4: STACK_GLOBAL of amp_clipfix.observed's `os.system`, called with one string
        planted = b"\x80\x04" + short_string("amp_clipfix.observed") + short_string("os.system")
        planted += b"\x93" + short_string(f"touch {marker}") + b"\x85R."
    entries = [p for p in (project / ".amp_clipfix_cache").rglob("*") if p.is_file()]
    for entry in entries:
        if entry.name != ".gitignore":
            entry.write_bytes(planted)

    assert check(project) == uncached
    assert not marker.exists()


@pytest.mark.parametrize("linked", ["the cache folder", "this version's folder"])
def test_a_cache_folder_linked_outside_the_project_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: str
) -> None:
    """A repository may bring its cache folder (or this version's) as a link to elsewhere."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = Path(version_folder(project))
    link = link.parent if linked == "the cache folder" else link
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    uncached = check(project, "--no-cache")

    assert check(project) == check(project) == uncached
    replayed = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--lightning-version", "2.6.6", "."],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert replayed.returncode == 1 and "ACF002" in replayed.stdout
    assert list(elsewhere.iterdir()) == []
