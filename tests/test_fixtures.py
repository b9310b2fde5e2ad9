"""Every before/after case under fixtures/ is picked up here.

A case is a folder with `input/` (the project as a user has it), `expected/` (the project after
`amp-clipfix apply --yes`; absent when nothing may change) and `case.json`:

    {"description": "...", "strategy": "auto", "lightning_version": "2.6.6",
     "findings": ["train.py:8:50: ACF001"], "remaining": []}

`findings` are what `check` reports before the fix; `remaining` what it reports after it.
Without `lightning_version` no `--lightning-version` is passed: the release comes from the case's
own pin files (fixtures/pin_*); `torch_version` likewise passes `--torch-version`, and `ignore`
(codes) `--ignore`: a case about one rule that also holds what a migration rule reports. `rule`
names the rule a case without its finding is a near miss of (tests/fixture_cases.py: a case may
also live in its rule's folder, `fixtures/<RULE>/<case>`; test ids carry the rules, so
`pytest -k ACF005` runs that rule's cases). An optional
`report` pins the whole text report `check` prints on stdout (every finding with its sites and
fix), line by line. `"installed": false` runs the case as if no Lightning and no torch were
installed next to amp-clipfix (a release only assumed, `fixtures/release_assumed_*`).
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_cases import case_folders, case_id, load_case

from amp_clipfix.cli import main
from amp_clipfix.project import pins

CASES = case_folders()
FINDING_LINE = re.compile(r"^(\S.*?:\d+:\d+: ACF\d{3}) ")


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not {"__pycache__", ".amp_clipfix_cache"} & set(path.parts)
    }


def run_cli(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # noqa: ANN201
    monkeypatch.chdir(project)
    return CliRunner().invoke(main, [*args, "."], catch_exceptions=False)


def options(spec: dict) -> list[str]:
    """Without `lightning_version` the case's own pin files (or their absence) decide."""
    version, torch = spec.get("lightning_version"), spec.get("torch_version")
    return (
        ["--strategy", spec.get("strategy", "auto")]
        + (["--lightning-version", version] if version else [])
        + (["--torch-version", torch] if torch else [])
        + (["--ignore", ",".join(spec["ignore"])] if spec.get("ignore") else [])
    )


def reported(output: str) -> list[str]:
    return [match.group(1) for line in output.splitlines() if (match := FINDING_LINE.match(line))]


@pytest.fixture(params=CASES, ids=[case_id(case) for case in CASES])
def case(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict, Path]:
    project = tmp_path / "project"
    shutil.copytree(
        request.param / "input", project, ignore=shutil.ignore_patterns(".amp_clipfix_cache")
    )
    spec = load_case(request.param)
    if spec.get("installed") is False:
        monkeypatch.setattr(pins, "installed_version", lambda package: None)
    return request.param, spec, project


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30


def test_check_reports_the_expected_findings(case, monkeypatch: pytest.MonkeyPatch) -> None:
    _, spec, project = case
    result = run_cli(project, monkeypatch, "check", *options(spec))
    assert reported(result.output) == spec["findings"], result.output
    assert result.exit_code == (1 if spec["findings"] else 0), result.output
    if "report" in spec:
        assert result.stdout.splitlines() == spec["report"], result.stdout


def test_apply_gives_the_expected_project(case, monkeypatch: pytest.MonkeyPatch) -> None:
    source, spec, project = case
    expected_root = source / "expected" if (source / "expected").is_dir() else source / "input"
    result = run_cli(project, monkeypatch, "apply", "--yes", *options(spec))
    assert tree_bytes(project) == tree_bytes(expected_root), result.output
    remaining = spec.get("remaining", [])
    assert result.exit_code == (1 if remaining else 0), result.output
    after = run_cli(project, monkeypatch, "check", *options(spec))
    assert reported(after.output) == remaining, after.output


def test_apply_is_idempotent_and_output_parses(case, monkeypatch: pytest.MonkeyPatch) -> None:
    _, spec, project = case
    run_cli(project, monkeypatch, "apply", "--yes", *options(spec))
    once = tree_bytes(project)
    for name, data in once.items():
        if name.endswith(".py"):
            ast.parse(data)
    run_cli(project, monkeypatch, "apply", "--yes", *options(spec))
    assert tree_bytes(project) == once
