"""`check` run in this process with the files the analysis parses with `ast` counted (at
`summary.summarise`): the big-tree tests assert which files a finding costs."""

from __future__ import annotations

from pathlib import Path

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
