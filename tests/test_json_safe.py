"""output.safe_text.json_safe returns an ASCII text without DEL as it is (no pattern compiled),
and escapes every other text as the pattern says."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from amp_clipfix.output.safe_text import _JSON_UNSAFE, json_safe


def by_the_pattern(document: str) -> str:
    return re.sub(_JSON_UNSAFE, lambda match: f"\\u{ord(match.group()):04x}", document)


@given(st.text(alphabet=st.characters(max_codepoint=0x7F, exclude_categories=())))
def test_an_ascii_text_is_escaped_as_the_pattern_says(document: str) -> None:
    assert json_safe(document) == by_the_pattern(document)


@given(st.text())
def test_any_text_is_escaped_as_the_pattern_says(document: str) -> None:
    assert json_safe(document) == by_the_pattern(document)


def test_del_c1_separators_and_surrogates_are_escaped() -> None:
    assert json_safe('{"a": "x\x7fy"}') == '{"a": "x\\u007fy"}'
    assert json_safe("\x9b \u2028 \udcff \u202e") == "\\u009b \\u2028 \\udcff \\u202e"
    assert json_safe('{"path": "plain.py"}') == '{"path": "plain.py"}'
