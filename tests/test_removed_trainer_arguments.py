"""A trainer section that sets an argument Lightning 2.0 removed runs on 1.x only (ACF011 then
offers no rewrite): which sections config_sites.precision_lines_beside names, and the text scan
(block_keys) that decides whether the config is composed at all."""

from __future__ import annotations

from amp_clipfix.analysis.config_sites import block_keys, precision_lines_beside
from amp_clipfix.analysis.lightning_api import TRAINER_ARGUMENTS_REMOVED_IN_2_0 as REMOVED

CONFIG = """\
trainer:
  gpus: 2
  # a comment at another column
  precision: 16
  plugins:
    - class_path: x
exp_manager:
  resume_from_checkpoint: null
other:
  precision: 16
  max_epochs: 3
"""


def test_block_keys_are_the_keys_at_the_same_column_of_the_same_block() -> None:
    rows = CONFIG.splitlines()
    assert block_keys(rows, 4) == {"gpus", "precision", "plugins"}
    assert block_keys(rows, 10) == {"precision", "max_epochs"}
    assert block_keys(rows, 3) == set()  # a comment holds no key


def test_a_sequence_item_is_its_own_block() -> None:
    rows = ["runs:", "  - precision: 16", "    gpus: 1", "  - precision: 16", "    devices: 1"]
    assert block_keys(rows, 2) == {"precision", "gpus"}
    assert block_keys(rows, 4) == {"precision", "devices"}
    rows = ["runs:", "  - gpus: 1", "    precision: 16", "  - devices: 1"]
    assert block_keys(rows, 3) == {"gpus", "precision"}


def test_only_the_trainer_section_that_sets_a_removed_argument_is_named() -> None:
    assert precision_lines_beside(CONFIG, REMOVED, {4, 10}) == {4: "gpus"}


def test_another_section_setting_such_a_key_names_nothing() -> None:
    text = "trainer:\n  precision: 16\nexp_manager:\n  resume_from_checkpoint: null\n"
    assert precision_lines_beside(text, REMOVED, {2}) == {}


def test_the_first_removed_argument_by_name_is_given() -> None:
    text = "trainer:\n  tpu_cores: 8\n  precision: bf16\n  auto_select_gpus: true\n"
    assert precision_lines_beside(text, REMOVED, {3}) == {3: "auto_select_gpus"}


def test_a_flow_mapping_is_not_composed_and_keeps_the_rewrite() -> None:
    # block_keys reads block mappings only: a flow one is left as the rewrite had it
    assert precision_lines_beside("trainer: {gpus: 1, precision: 16}\n", REMOVED, {1}) == {}
