"""The parse check of a config the key scan rules out (sources/yaml.check_parses): libyaml's
events counted in C, never made Python objects, and the depth test (`too_deep`) by literal
searches: each says what the regular expression and the event loop they replace said."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

from amp_clipfix.analysis.config_sites import collect_config_sites
from amp_clipfix.sources import yaml as yaml_source
from amp_clipfix.sources.text import SourceError

# The test too_deep replaced: a regular expression tried at every position of the text.
DEEP_BEFORE = re.compile(r"^[ \t-]{64}|[\[{]{8}", re.MULTILINE)


def deep_before(text: str) -> bool:
    return DEEP_BEFORE.search(text) is not None or text.count("[") + text.count("{") > 256


DEEP_TEXTS = [
    "",
    "a: 1\n",
    " " * 64 + "a: 1\n",
    " " * 63 + "a: 1\n",
    "a:\n" + "-" * 64 + " 1\n",
    "a:\r" + " " * 64 + "b\n",  # a carriage return starts no line for either
    "a: " + "[" * 8 + "]" * 8 + "\n",
    "a: " + "[{" * 4 + "}]" * 4 + "\n",
    "a: " + "[" * 7 + "]" * 7 + "\n",
    "a: [" * 300,
    "[" * 8,
    "x" + "{" * 7,
]


@pytest.mark.parametrize("text", DEEP_TEXTS)
def test_too_deep_says_what_the_expression_said(text: str) -> None:
    assert yaml_source.too_deep(text) == deep_before(text)


def test_too_deep_says_what_the_expression_said_on_random_texts() -> None:
    chooser = random.Random(35)
    for _ in range(20_000):
        pieces = [chooser.choice("[{ \t-\n\ra]") for _ in range(chooser.randint(0, 80))]
        where = chooser.randint(0, len(pieces))
        pieces[where:where] = chooser.choice(["[" * 8, "{[" * 4, " " * 64, "-" * 65, ""])
        text = "".join(pieces)
        assert yaml_source.too_deep(text) == deep_before(text), repr(text)


BROKEN = [
    "trainer:\n  precision: 32\n  devices: [1\n",
    "a: 1\n b: 2\n",
    "a: b: c\n",
    "a: 'open\n",
    "- a\nb: 1\n",
    "a: 1\n\tb: 2\n",
]


@pytest.mark.parametrize("text", BROKEN)
def test_a_broken_config_ruled_out_still_fails_as_ruamel_says(text: str) -> None:
    with pytest.raises(SourceError) as composed:
        yaml_source.compose_documents(text)
    with pytest.raises(SourceError) as checked:
        yaml_source.check_parses(text)
    assert str(checked.value) == str(composed.value)


def test_the_parse_check_makes_no_python_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml's events are never turned into Python objects (PyYAML's `parse` makes one per
    event: most of the check's cost on a large config)."""

    def no_events(*args: object, **kwargs: object) -> None:
        raise AssertionError("Python events made")

    monkeypatch.setattr(yaml, "parse", no_events)
    monkeypatch.setattr(yaml_source, "compose_documents", no_events)
    text = "trainer:\n  precision: 32\nitems:\n" + "".join(f"  - {i}\n" for i in range(500))
    yaml_source.check_parses(text)
    assert collect_config_sites(Path("c.yaml"), text).sites == ()
