"""Every fixture's `expected/` is a fixpoint (issue 36): `check` there reports nothing `apply`
was meant to fix, and `apply` there changes nothing.

`tests/test_fixtures.py` checks the same program after `apply` in a copy of `input/`; this reads
the committed `expected/` itself, so a hand-edited or stale expectation that a fix would change
again (or that still holds a finding the fix was for) fails here.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from amp_clipfix.project import pins
from tests.test_fixtures import CASES, load_case, options, reported, run_cli, tree_bytes

SETTLED = [case for case in CASES if (case / "expected").is_dir()]


def code(finding: str) -> str:
    return finding.rsplit(" ", 1)[-1]


@pytest.mark.parametrize("case", SETTLED, ids=[case.name for case in SETTLED])
def test_expected_is_a_fixpoint(
    case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_case(case)
    if spec.get("installed") is False:  # as tests/test_fixtures.py runs such a case
        monkeypatch.setattr(pins, "installed_version", lambda package: None)
    project = tmp_path / "project"
    shutil.copytree(case / "expected", project, ignore=shutil.ignore_patterns(".amp_clipfix_cache"))
    fixed = Counter(map(code, spec["findings"])) - Counter(map(code, spec.get("remaining", [])))

    checked = run_cli(project, monkeypatch, "check", *options(spec))
    again = [f for f in reported(checked.output) if code(f) in fixed]
    assert again == [f for f in spec.get("remaining", []) if code(f) in fixed], checked.output

    before = tree_bytes(project)
    run_cli(project, monkeypatch, "apply", "--yes", *options(spec))
    assert tree_bytes(project) == before
