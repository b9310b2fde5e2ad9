"""ACF009's LightningCLI search (analysis/cli_config.py) is run only when something may set
`gradient_clip_val` for the CLI's Trainer: a config, or a `trainer_defaults=` that may hold it.
Without one the search can find nothing, so the project's CLI calls are not looked for and
their callees are not evaluated (`cli_calls`); a `trainer_defaults={...}` written with other
string keys only holds nothing. The output is the same as with the search run, and an edit
that writes the first setting runs it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_incremental import edit_line, same_as_cold
from test_manual_gate import MODULE

from amp_clipfix.analysis import cli_config
from amp_clipfix.analysis.cli_config import may_hold
from amp_clipfix.cli import main

CLI = """\
from lightning.pytorch.cli import LightningCLI

from model import Model


def main():
    LightningCLI(Model, trainer_defaults=DEFAULTS)


def other():
    LightningCLI(Model, trainer_defaults={"max_epochs": 1, "logger": False})


def bare():
    LightningCLI(Model)
"""


def project(root: Path, defaults: str) -> Path:
    (root / "model.py").write_text(MODULE, "utf-8")  # `Model` optimizes manually
    (root / "cli.py").write_text(f"DEFAULTS = {defaults}\n{CLI}", "utf-8")
    return root


def check(root: Path, monkeypatch: pytest.MonkeyPatch, gate: bool) -> tuple[int, str, int]:
    """`check` over the project: its exit code, what it prints, and how many callees of
    calls in files naming LightningCLI the whole search evaluated (`cli_calls` run to its
    end); `gate`: False makes `defaulted` say yes whatever the project writes."""
    searched: list[object] = []
    calls = cli_config.cli_calls

    def counted(facts: Any) -> Any:
        found = list(calls(facts))
        searched.append(found)
        return iter(found)

    monkeypatch.setattr(cli_config, "cli_calls", counted)
    if not gate:
        monkeypatch.setattr(cli_config, "defaulted", lambda *_: True)
    monkeypatch.chdir(root)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    monkeypatch.undo()
    return result.exit_code, result.output, len(searched)


@pytest.mark.parametrize(
    ("node", "holds"),
    [
        ('{"max_epochs": 1}', False),
        ("{}", False),
        ('{"gradient_clip_val": 0.5}', True),
        ('{"max_epochs": 1, **extra}', True),  # the unpacked dict may hold it
        ('{KEY: 0.5, "max_epochs": 1}', True),  # a key the code computes
        ('{1: 0.5, "max_epochs": 1}', True),  # not only strings: left to the evaluator
        ("DEFAULTS", True),
        ("dict(max_epochs=1)", True),
    ],
)
def test_what_may_hold_the_key(node: str, holds: bool) -> None:
    expression = cli_config.ast.parse(node, mode="eval").body
    assert may_hold(expression, "gradient_clip_val") is holds


def test_nothing_sets_the_clip_no_cli_search_and_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, '{"max_epochs": 3}')
    code, output, searched = check(root, monkeypatch, gate=True)
    ungated = check(root, monkeypatch, gate=False)
    assert searched == 0
    assert ungated[2] == 1  # the search ran, and found what the gate said: nothing
    assert (code, output) == ungated[:2]
    assert "ACF009" not in output


@pytest.mark.parametrize(
    ("defaults", "column"),
    [
        ('{"max_epochs": 3, "gradient_clip_val": 0.5}', 51),
        ("dict(max_epochs=3, gradient_clip_val=0.5)", 49),
        ('{"max_epochs": 3, **{"gradient_clip_val": 0.5}}', 54),
    ],
)
def test_a_default_that_sets_the_clip_runs_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, defaults: str, column: int
) -> None:
    """`trainer_defaults=DEFAULTS`, a module constant the gate evaluates."""
    root = project(tmp_path, defaults)
    code, output, searched = check(root, monkeypatch, gate=True)
    assert searched == 1
    assert (code, output) == check(root, monkeypatch, gate=False)[:2]
    assert output.startswith(f"cli.py:1:{column}: ACF009 `Trainer(gradient_clip_val=...)`")
    assert "manual optimization: model.py:5 class Model" in output


def test_a_config_that_sets_the_clip_runs_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, '{"max_epochs": 3}')
    (root / "config.yaml").write_text("trainer:\n  gradient_clip_val: 0.5\n", "utf-8")
    code, output, searched = check(root, monkeypatch, gate=True)
    assert searched == 1
    assert (code, output) == check(root, monkeypatch, gate=False)[:2]
    assert "config.yaml:2:22: ACF009" in output


def test_an_edit_that_writes_the_first_setting_runs_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate reads the words `trainer_defaults` and `LightningCLI`, which the query
    records: a warm run after an edit prints a cold run's bytes both ways."""
    root = project(tmp_path, '{"max_epochs": 3}')
    monkeypatch.chdir(root)
    first = same_as_cold(root)
    assert b"ACF009" not in first
    edit_line("cli.py", '{"max_epochs": 1, "logger": False}', '{"gradient_clip_val": 1.0}')(root)
    assert b"ACF009" in same_as_cold(root)
    edit_line("cli.py", '{"gradient_clip_val": 1.0}', '{"max_epochs": 1, "logger": False}')(root)
    assert same_as_cold(root) == first
