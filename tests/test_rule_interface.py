"""The shape of the rules: rules never import rules (the import-linter `independence` contract
of pyproject.toml names every rule module), and every rule has one interface."""

from __future__ import annotations

from pathlib import Path

import grimp
import tomllib

from amp_clipfix import rules

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
