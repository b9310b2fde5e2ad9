"""A cache is an optimisation, never a source of truth: over every fixture project, each way a
check can be answered from the cache (the first run that fills it, the collection cache of a
warm run, the per-file entries alone, the replay of an unchanged run) prints, byte for byte on
stdout and stderr, and exits with, what a fresh `--no-cache` check does; also after a file
changed between two runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from piped import Run, amp_clipfix

from amp_clipfix import replay
from amp_clipfix.cache_layout import version_folder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROJECTS = sorted(path / "input" for path in FIXTURES.iterdir() if (path / "input").is_dir())
FORMATS = ("text", "json")


@pytest.fixture(autouse=True)
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))  # this user's secret


def not_run_again(*arguments: object) -> None:
    raise AssertionError("an unchanged check ran again instead of being replayed")


def answers(project: Path, arguments: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cached answer of `check ARGUMENTS` equals the fresh one."""
    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    cold = amp_clipfix(project, *arguments)  # fills the per-file, collection and replay caches
    warm = amp_clipfix(project, *arguments, entry=False)  # the collection cache
    with monkeypatch.context() as patched:
        if fresh.code in (0, 1):  # a run with errors (exit 2) is never noted
            patched.setattr(replay, "_command_line", not_run_again)
        replayed = amp_clipfix(project, *arguments)
    cache = Path(version_folder(project))
    for entry in [*cache.glob("*/project-*"), *cache.glob("replay/*")]:
        entry.unlink()  # the per-file entries alone: the project is resolved again
    per_file = amp_clipfix(project, *arguments, entry=False)
    expected = {"cold": fresh, "warm": warm, "replayed": replayed, "per-file": per_file}
    assert {name: fresh for name in expected} == {"cold": cold, **expected}


def formats_for(project: Path) -> tuple[str, ...]:
    """Text and JSON; SARIF too where a notebook is (it reads the notebook again for lines)."""
    return FORMATS + (("sarif",) if any(project.rglob("*.ipynb")) else ())


def change_a_file(project: Path) -> None:
    """What an edit between two runs may do: unfuse every optimizer (findings go away), else
    add a line to the first module (every line number below it moves)."""
    files = sorted(
        path
        for path in project.rglob("*")
        if path.is_file() and not path.is_symlink() and ".git" not in path.parts
    )
    fused = [path for path in files if b"fused=True" in path.read_bytes()]
    modules = [path for path in files if path.suffix == ".py"]
    for path in fused:
        path.write_bytes(path.read_bytes().replace(b"fused=True", b"fused=False"))
    if not fused and modules:
        modules[0].write_bytes(b"import os  # an added line\n" + modules[0].read_bytes())


@pytest.mark.parametrize("source", PROJECTS, ids=[path.parent.name for path in PROJECTS])
def test_every_cached_answer_is_the_fresh_answer(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    shutil.copytree(source, project, symlinks=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    formats = formats_for(project)
    for output_format in formats:
        answers(project, ("check", "--format", output_format, "."), monkeypatch)

    change_a_file(project)  # the caches hold the old state: each answer must see the new one
    for output_format in formats:
        arguments = ("check", "--format", output_format, ".")
        fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
        runs: dict[str, Run] = {"cached": amp_clipfix(project, *arguments, entry=False)}
        runs["noted again"] = amp_clipfix(project, *arguments)
        with monkeypatch.context() as patched:
            if fresh.code in (0, 1):
                patched.setattr(replay, "_command_line", not_run_again)
            runs["replayed"] = amp_clipfix(project, *arguments)
        assert runs == {name: fresh for name in runs}
