"""libyaml composes a config with an empty value (`initial_checkpoint_dir:` alone on its line),
node for node what ruamel composes: both mark a block mapping's empty value, whose `:` ends its
line, where the next token starts (sources/yaml.plain_empty_values). ruamel marks any other
empty value at the indicator before it (a sequence's `-`, a flow collection's `:`, a `:`
with a comment after it): there ruamel still composes."""

from __future__ import annotations

import itertools

import pytest

from amp_clipfix.sources import yaml as yaml_source
from bench.yaml_scan import shape

# Where an empty value may stand, and what may follow it before the next token.
EMPTY_VALUES = [
    "a:{gap}b: 1\n",
    "trainer:\n  precision:{gap}  max_epochs: 3\n",
    "trainer:\n  precision:{gap}optimizer:\n  fused: true\n",
    "a:\n  b:\n    c:{gap}d: 2\n",
    "- a:{gap}- b\n",
    "-{gap}- b\n",
    "a:\n  -{gap}  - x\n",
    "a:{gap}",
    "a: 1\nb:{gap}---\nc: 2\n",
    "a: 1\nb:{gap}...\n",
    "? a\n:{gap}b: 2\n",
    "a: {{b: , c: 1}}\n",
    "a: [b: , c]\n",
    "a: &x\n  b:{gap}c: *x\n",
    "a:{gap}b:{gap}c:{gap}",
]
GAPS = [
    "\n",
    "   \n",
    "\n\n",
    "  # a comment\n",
    "\n# a comment line\n",
    "\n  # an indented comment\n\n",
    " # one\n# two\n",
    "\r\n",
    "  # a comment\r\n\r\n",
]


def same_as_ruamel(text: str) -> bool:
    """libyaml's graph of `text` is ruamel's node for node (None: ruamel composes it)."""
    graph = yaml_source.libyaml_documents(text)
    return graph is None or shape(graph) == shape(yaml_source.ruamel_documents(text))


@pytest.mark.parametrize(("template", "gap"), list(itertools.product(EMPTY_VALUES, GAPS)))
def test_an_empty_value_is_marked_as_ruamel_marks_it(template: str, gap: str) -> None:
    text = template.format(gap=gap)
    if "\r" in gap:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")  # one kind of line break
    for variant in (text, text.rstrip("\r\n")):  # with and without the final line break
        try:
            yaml_source.ruamel_documents(variant)
        except yaml_source.SourceError:
            continue  # not YAML: composed by ruamel, which says why
        assert same_as_ruamel(variant)


@pytest.mark.parametrize(
    "text",
    [
        "trainer:\n  precision:\n  max_epochs: 3\n",
        "a:\n\n# c\nb: 1\n",
        "a: 1\nb:\n",
        "a:\n  b:\n\n  # c\n\nd: 1\n",
        "- a:\n  b: 1\n- c:\n",
    ],
)
def test_libyaml_now_composes_a_config_with_an_empty_value(text: str) -> None:
    graph = yaml_source.libyaml_documents(text)
    assert graph is not None  # before at_next_token: None, and ruamel composed it
    assert shape(graph) == shape(yaml_source.ruamel_documents(text))


@pytest.mark.parametrize(
    "text",
    ["a:  # c\nb: 1\n", "- \n- b\n", "a: {b: , c: 1}\n", "? a\n:\n? b\n: 1\n", "a:\n? b\n: 1\n"],
)
def test_an_empty_value_ruamel_marks_at_its_indicator_is_left_to_ruamel(text: str) -> None:
    assert yaml_source.libyaml_documents(text) is None
    yaml_source.ruamel_documents(text)  # and it composes


def test_litgpt_shaped_config_reads_the_same_sites() -> None:
    """A CLI config of a training function (top-level `precision:` and an empty value): the
    reader's sites and settings are the same from libyaml's graph as from ruamel's."""
    from pathlib import Path

    from amp_clipfix.analysis.config_sites import ConfigReader

    text = (
        "model_name: m\nout_dir: out\nprecision: bf16-mixed\ninitial_checkpoint_dir:\n"
        "resume: false\ntrain:\n  max_norm: 1.0\noptimizer:\n  class_path: torch.optim.AdamW\n"
        "  init_args:\n    lr: 0.1\n    fused:\ntrainer:\n  precision: 16-mixed\n  plugins:\n"
    )
    graph = yaml_source.libyaml_documents(text)
    assert graph is not None
    readers = []
    for roots in (graph, yaml_source.ruamel_documents(text)):
        reader = ConfigReader(Path("c.yaml"), text)
        for root in roots:
            reader.read(root)
        readers.append([(s.kind, s.span, s.detail) for s in reader.sites])
    assert readers[0] == readers[1] and readers[0]
