"""Where the before/after cases of fixtures/ are, and which rules each is about.

A case is a folder with `input/` and `case.json`, either right under fixtures/ (`fixtures/<case>`)
or in its rule's folder (`fixtures/<RULE>/<case>`, as ruff's per-rule fixtures and Fixit's
VALID / INVALID examples). A case is about the codes its `findings` expect, the code its
`rule` names (a negative case: the rule it is a near miss of) and the rule of its folder; the
test ids carry them, so `pytest -k ACF005` selects that rule's cases.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RULE_FOLDER = re.compile(r"ACF\d{3}")


def case_folders(root: Path = FIXTURES) -> list[Path]:
    """Every case, in path order: `fixtures/<case>` and `fixtures/<RULE>/<case>`."""
    folders = [path for path in root.iterdir() if (path / "input").is_dir()]
    for rule in root.iterdir():
        if rule.is_dir() and RULE_FOLDER.fullmatch(rule.name):
            folders += [path for path in rule.iterdir() if (path / "input").is_dir()]
    return sorted(folders)


def load_case(case: Path) -> dict:
    return json.loads((case / "case.json").read_text(encoding="utf-8"))


def codes_of(findings: list[str]) -> set[str]:
    """The codes of finding lines (`train.py:8:50: ACF001`)."""
    return {finding.rsplit(" ", 1)[-1] for finding in findings}


def case_rules(case: Path, spec: dict) -> list[str]:
    """The rules a case is about: its findings' codes, its `rule`, its folder's rule."""
    rules = codes_of(spec["findings"])
    if "rule" in spec:
        rules.add(spec["rule"])
    if RULE_FOLDER.fullmatch(case.parent.name):
        rules.add(case.parent.name)
    return sorted(rules)


def case_id(case: Path, root: Path = FIXTURES) -> str:
    """`<case>-ACF001-ACF007` or `ACF005/<case>`: the case's path and the rules it is about."""
    name = case.relative_to(root).as_posix()
    codes = [code for code in case_rules(case, load_case(case)) if code not in name.split("/")]
    return "-".join([name, *codes])
