"""libyaml composes two more kinds of config than before (sources/yaml.libyaml_documents), node
for node what ruamel composes: a text without a final line break (composed with one added, the
marks past the text's end put back at its end, as ruamel marks them), with its tags resolved
once per distinct scalar. Where that could differ (a literal block scalar's value keeps the
added line break; a CR line break), ruamel still composes."""

from __future__ import annotations

import pytest

from amp_clipfix.sources import yaml as yaml_source
from bench.yaml_scan import shape

UNENDED = [
    "a: 1",
    "trainer:\n  precision: 16-mixed\n  gradient_clip_val: 1.0",
    "optimizer:\n  _target_: torch.optim.AdamW\n  fused: true\n  betas: [0.9, 0.99]",
    "- x\n- y: {z: 2}",
    "a: &r {b: 1}\nc: *r",
    "a: 'quoted'\n# a last comment",
    "a: 1\n---\nb: [1, 2]",
    "model:\n  layers:\n    - 1\n    - 2",
    'a: "x"   ',
    "a: yes\nb: 1_000\nc: ~",
]


@pytest.mark.parametrize("text", UNENDED)
def test_libyaml_composes_a_text_without_a_final_line_break(text: str) -> None:
    graph = yaml_source.libyaml_documents(text)
    assert graph is not None
    assert shape(graph) == shape(yaml_source.ruamel_documents(text))


@pytest.mark.parametrize("text", ["a: |\n  literal", "a: 1\r", "a: 1\rb: 2", "a: 1\r\nb: 2"])
def test_ruamel_composes_what_the_added_line_break_would_change(text: str) -> None:
    assert yaml_source.libyaml_documents(text) is None
    yaml_source.ruamel_documents(text)  # and it composes


def test_the_same_scalar_gets_its_tag_once_and_each_kind_its_own() -> None:
    """A plain `1` is an int, a quoted one a string, a plain `true` a bool, whichever is met
    first (the kept tags are keyed by kind, value and how it is written)."""
    text = "b: '1'\na: 1\nh: 'true'\ng: true\nd: [1]\ne: {f: 1}\n"
    for _ in range(2):  # the second composition reads the kept tags
        graph = yaml_source.libyaml_documents(text)
        assert graph is not None
        assert shape(graph) == shape(yaml_source.ruamel_documents(text))
        tags = {key.value: str(value.tag).rsplit(":", 1)[-1] for key, value in graph[0].value}
        assert tags == {"b": "str", "a": "int", "h": "str", "g": "bool", "d": "seq", "e": "map"}


class MappingNode:
    """A node that fails when walked (shared_nodes must not walk a text without anchors)."""

    @property
    def value(self) -> list[object]:
        raise AssertionError("walked")


def test_a_text_without_an_anchor_shares_no_node_and_is_not_walked() -> None:
    assert yaml_source.shared_nodes([MappingNode()], "a: {b: 1}\nc: {b: 1}\n") == set()
    text = "base: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n"
    roots = yaml_source.compose_documents(text)
    shared = yaml_source.shared_nodes(roots, text)
    assert shared and shared == yaml_source.shared_nodes(roots)  # with anchors: walked, as ever
