"""The JSON Schema of `[tool.amp-clipfix]` (project/config_schema.json, `amp-clipfix schema
--config`) and the run's own validator (project/config.py, no schema library at run time: a
check pays no start-up for it) accept and refuse the same tables."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.kinds import Strategy
from amp_clipfix.project.config import KEYS, ConfigError, config_from_table

SCHEMA = json.loads(CliRunner().invoke(main, ["schema", "--config"]).stdout)

TABLES = [
    {},
    {"strategy": "unfuse"},
    {"strategy": "fast"},
    {"strategy": 1},
    {"lightning-version": "2.6.6"},
    {"lightning-version": "2.6"},
    {"lightning-version": "2.0.9.post0"},
    {"lightning-version": "2.7.0rc1"},
    {"lightning-version": 2.1},
    {"lightning-version": "v2.6"},
    {"lightning-version": "2.6.6.1"},
    {"exclude": ["tests/*", "build"]},
    {"exclude": "tests/*"},
    {"exclude": [1]},
    {"extend-exclude": []},
    {"select": ["ACF001"], "extend-select": ["ACF007"], "ignore": ["ACF002"]},
    {"select": "ACF001"},
    {"extend-select": [None]},
    {"per-file-ignores": {"tests/*": ["ACF001"], "conftest.py": []}},
    {"per-file-ignores": ["tests/*:ACF001"]},
    {"per-file-ignores": {"tests/*": "ACF001"}},
    {"helper-module": "mypkg.amp_helpers"},
    {"helper-module": "my-pkg.helpers"},
    {"helper-module": 3},
    {"bogus": 1},
]


@pytest.mark.parametrize("table", TABLES, ids=[json.dumps(t) for t in TABLES])
def test_schema_and_validator_agree(table: dict) -> None:
    try:
        config_from_table(table, "[tool.amp-clipfix]", None)
        accepted = True
    except ConfigError:
        accepted = False
    assert jsonschema.Draft7Validator(SCHEMA).is_valid(table) == accepted


def test_the_schema_names_every_key_and_strategy() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert list(SCHEMA["properties"]) == list(KEYS)
    assert SCHEMA["properties"]["strategy"]["enum"] == [strategy.value for strategy in Strategy]
