"""Per-rule fixtures, as ruff's rows and Fixit's VALID / INVALID: every rule that reports
findings has failing cases (its finding expected) and at least as many passing ones (no finding
of it), and `pytest -k ACF005` selects a rule's cases (tests/fixture_cases.py).

A passing case of a rule is one of its near misses (a case whose `rule`, or folder, names it and
whose input has no finding of it) or the project a fix of it writes (`expected/`, which
tests/test_fixtures.py checks reports none of it: `remaining`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fixture_cases import FIXTURES, RULE_FOLDER, case_folders, case_id, codes_of, load_case

from amp_clipfix.rules import RULES

CASES = [(case, load_case(case)) for case in case_folders()]
FINDING_RULES = sorted(code for code, rule in RULES.items() if rule.reaches is None)


def failing() -> Counter[str]:
    return Counter(code for _, spec in CASES for code in codes_of(spec["findings"]))


def near_misses() -> Counter[str]:
    counted: Counter[str] = Counter()
    for case, spec in CASES:
        named = {spec.get("rule"), case.parent.name if case.parent != FIXTURES else None}
        counted.update(code for code in named - {None} if code not in codes_of(spec["findings"]))
    return counted


def fixed() -> Counter[str]:
    counted: Counter[str] = Counter()
    for case, spec in CASES:
        if (case / "expected").is_dir():
            counted.update(codes_of(spec["findings"]) - codes_of(spec.get("remaining", [])))
    return counted


@pytest.mark.parametrize("code", FINDING_RULES)
def test_every_rule_has_as_many_passing_as_failing_cases(code: str) -> None:
    fails, misses, fixes = failing()[code], near_misses()[code], fixed()[code]
    assert fails >= 1, f"{code}: no case expects its finding"
    assert misses >= 1, f"{code}: no near miss (a case whose `rule` names it, without its finding)"
    assert misses + fixes >= fails, f"{code}: {fails} failing, {misses} near misses + {fixes} fixed"


def test_a_case_names_only_rules_that_exist() -> None:
    named = {spec["rule"] for _, spec in CASES if "rule" in spec}
    folders = {p.name for p in FIXTURES.iterdir() if RULE_FOLDER.fullmatch(p.name)}
    assert named | folders <= set(RULES)


def test_a_case_in_a_rule_folder_is_about_that_rule() -> None:
    for case, spec in CASES:
        if case.parent != FIXTURES:
            assert spec.get("rule", case.parent.name) == case.parent.name, case


def test_ids_carry_the_rules_a_case_is_about() -> None:
    for case, spec in CASES:
        ident = case_id(case)
        for code in codes_of(spec["findings"]) | ({spec["rule"]} if "rule" in spec else set()):
            assert code in ident, (ident, code)
    assert case_id(FIXTURES / "trainer_negative_no_clip") == "trainer_negative_no_clip-ACF002"


def test_a_rule_folder_case_is_found(tmp_path: Path) -> None:
    for folder in ("plain/input", "ACF005/near_miss/input", "runtime/other/input"):
        (tmp_path / folder).mkdir(parents=True)
    assert case_folders(tmp_path) == [tmp_path / "ACF005" / "near_miss", tmp_path / "plain"]
