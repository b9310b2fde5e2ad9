"""The runtime cases under fixtures/runtime/<case>/ that the runtime test modules share: which
module runs a case (by the kind its case.json names) and the interpreter its program runs with."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import noxfile

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT / "fixtures" / "runtime"
# What a case.json names decides the module that runs it: test_silent_clipping.py ("hazard"),
# test_migration.py ("migration"), test_compose_runtime.py ("compose"); a case with none is a
# failing program with fixes (test_runtime_fix.py).
KINDS = ("hazard", "migration", "compose")


@dataclass(frozen=True)
class CaseBase:
    """One case: its folder's name, the project, the entry point and the release it runs on."""

    name: str
    project: Path
    entry: str
    runtime: tuple[str, ...]  # the release's requirement lines; empty: this interpreter

    @property
    def python(self) -> str:
        """The interpreter of the case's program."""
        return str(noxfile.python_of(list(self.runtime))) if self.runtime else sys.executable

    def __str__(self) -> str:
        return self.name


def case_specs(kind: str | None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """In name order, the cases of one kind (None: the failing programs): the common fields of
    `CaseBase` and the case.json."""
    for spec in sorted(CASES_DIR.glob("*/case.json")):
        data = json.loads(spec.read_text(encoding="utf-8"))
        kinds = [name for name in KINDS if name in data]
        if kinds != ([kind] if kind else []):
            continue
        common = {
            "name": spec.parent.name,
            "project": spec.parent / "project",
            "entry": data["entry"],
            "runtime": tuple(data.get("runtime", ())),
        }
        yield common, data
