"""Migration cases (ACF010-ACF012) run as written and after `apply` (fixtures/runtime/<case>/
with `"migration"` in case.json).

- `loud`: the program fails as written with `expect` on stderr, and trains after `apply`.
- `warning`: as written it warns (`expect` on stderr; with `python_flags` such as
  `-W error::FutureWarning` it fails instead); after `apply` it runs under the same flags without
  the warning. With `same_output` the fixed program prints exactly what the original printed
  (run without the flags): the rewrite kept the setting.
- `unchanged`: below a rule's boundary `apply` changes nothing and the program runs; the new
  spelling written in by hand fails with `expect`, which is why no rewrite is offered there.

A case with `"runtime": [...]` runs with that release's nox environment (`nox -t releases`) and
pins that release in its `requirements.txt`; amp-clipfix runs from the test interpreter and must
read the pin.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cases import CaseBase, case_specs
from programs import PROGRAMS, Proc

TIMEOUT = 300


@dataclass(frozen=True)
class Case(CaseBase):
    kind: str
    expect: str
    flags: tuple[str, ...]
    same_output: bool


def load_cases() -> list[Case]:
    return [
        Case(
            **common,
            kind=data["migration"],
            expect=data["expect"],
            flags=tuple(data.get("python_flags", ())),
            same_output=bool(data.get("same_output")),
        )
        for common, data in case_specs("migration")
    ]


CASES = load_cases()


def run_program(case: Case, project: Path, flags: tuple[str, ...]) -> Proc:
    """`python FLAGS ENTRY` without PYTHONWARNINGS: forked (programs.py) where the case takes no
    warning options, else in a fresh interpreter, each run of the case alike (a fork server set
    its warning filters when it started)."""
    if not case.flags and "PYTHONWARNINGS" not in os.environ:
        return PROGRAMS.run(case.python, [case.entry], project, {})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    command = [case.python, *flags, case.entry]
    done = subprocess.run(
        command, cwd=project, capture_output=True, text=True, timeout=TIMEOUT, env=env
    )
    return Proc(" ".join(command), done.returncode, done.stdout, done.stderr)


def apply(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "--no-cache", "."],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def snapshot(project: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(project)): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".amp_clipfix_cache" not in p.parts
    }


@pytest.mark.parametrize("case", CASES, ids=str)
def test_migration_case(
    case: Case, tmp_path: Path, require_release: Callable[[tuple[str, ...]], None]
) -> None:
    require_release(case.runtime)
    project = tmp_path / "project"
    shutil.copytree(case.project, project)
    before = run_program(case, project, case.flags)
    if case.kind == "loud" or (case.kind == "warning" and case.flags):
        assert before.returncode != 0, before.stdout + before.stderr
        assert case.expect in before.stderr, before.stderr
    elif case.kind == "warning":
        assert before.returncode == 0, before.stderr
        assert case.expect in before.stderr, before.stderr
    else:
        assert before.returncode == 0, before.stderr
    reference = run_program(case, project, ()) if case.same_output else None
    if reference is not None:
        assert reference.returncode == 0, reference.stderr

    written = snapshot(project)
    fixed = apply(project)
    if case.kind == "unchanged":
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert snapshot(project) == written
        entry = project / case.entry
        entry.write_text(entry.read_text().replace('"bf16"', '"bf16-mixed"'))
        by_hand = run_program(case, project, case.flags)
        assert by_hand.returncode != 0 and case.expect in by_hand.stderr, by_hand.stderr
        return
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert snapshot(project) != written

    after = run_program(case, project, case.flags)
    assert after.returncode == 0, after.stderr
    assert case.expect not in after.stderr, after.stderr
    if reference is not None:
        assert after.stdout == reference.stdout
    assert "weight sum" in after.stdout, after.stdout  # it ran to the end
