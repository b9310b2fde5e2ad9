"""The shape of the rules: rules never import rules (the import-linter `independence` contract
of pyproject.toml names every rule module), and every rule has one interface."""

from __future__ import annotations

import importlib
from pathlib import Path

import grimp
import pytest
import tomllib

from amp_clipfix import rules
from amp_clipfix.models import Strategy
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.rules import Queries, find_findings

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = "rules never import rules"


def independence_modules() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == CONTRACT]
    assert contract["type"] == "independence"
    return list(contract["modules"])


def test_the_independence_contract_names_every_rule_module() -> None:
    modules = [f"{rules.__name__}.{name}" for name in rules._rule_modules()]
    assert len(modules) == len(rules.RULES) >= 13
    assert sorted(independence_modules()) == modules


def test_no_rule_module_imports_another_rule_module() -> None:
    graph = grimp.build_graph("amp_clipfix", cache_dir=None)
    modules = independence_modules()
    imported = {
        module: sorted(graph.find_modules_directly_imported_by(module) & set(modules))
        for module in modules
    }
    assert imported == {module: [] for module in modules}


def test_every_rule_is_one_module_with_one_check() -> None:
    """A rule module's `RULE` has its page and one `check` (an alias: `reaches` instead); its
    fixes per strategy are its findings' own (`RuleFix`) or the codemods' `targets`, and a rule
    asks the project's facts exactly when it names the words of the files it reads."""
    for name in rules._rule_modules():
        module = importlib.import_module(f"{rules.__name__}.{name}")
        rule = module.RULE
        assert rule.code == name.upper()
        assert rule.short and rule.full and rule.why and rule.example_before
        if rule.reaches is not None:
            assert rule.check is None and rule.targets is None and not rule.words
            continue
        assert rule.check is module.check, name
        assert not hasattr(module, "search") and not hasattr(module, "find"), name
        assert rule.writes_fixes == (rule.targets is None)
        assert rule.asks_facts == bool(rule.words) == rule.writes_fixes, name
        assert set(rule.fix_safety) <= {strategy.value for strategy in Strategy}


def test_a_check_without_words_is_given_no_facts() -> None:
    """The pipeline runs a rule that asks the facts only when it has them; a rule without words
    asks only the collected sites, and asking it for facts is a bug the assertion names."""
    queries = Queries((), DEFAULT_TARGET)
    assert find_findings((), DEFAULT_TARGET) == []
    with pytest.raises(AssertionError, match="asks for no facts"):
        queries.facts  # noqa: B018 - the property under test
