"""Spies on the run: `check` in this process with the files the analysis parses with `ast`
counted (at `summary.summarise`; the big-tree tests assert which files a finding costs), and
the arguments a function of the tool is called with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main


def check_counting_parses(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, list[str]]:
    """`check`'s exit code, output and the names of the files it parsed with `ast`."""
    from amp_clipfix.analysis import summary

    parsed: list[str] = []
    summarise = summary.summarise

    def counted(root: Path, path: Path, *args: object, **kwargs: object) -> object:
        parsed.append(path.name)
        return summarise(root, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summary, "summarise", counted)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "."])
    return result.exit_code, result.output, sorted(set(parsed))


def first_arguments(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[Any]:
    """The first argument of every call of `owner.name` from now on; each call goes through
    to the real function, so the run's output is what it would be unwatched."""
    return arguments_at(monkeypatch, owner, name, 0)


def arguments_at(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, index: int
) -> list[Any]:
    """The positional argument `index` of every call of `owner.name` from now on (1: the
    first after `self`, for a method patched on its class), each call going through."""
    seen: list[Any] = []
    real = getattr(owner, name)

    def spy(*arguments: Any, **options: Any) -> Any:
        seen.append(arguments[index])
        return real(*arguments, **options)

    monkeypatch.setattr(owner, name, spy)
    return seen
