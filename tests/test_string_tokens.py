"""ast_syntax.string_token_count answers a literal quoted once without tokenize (whose first
use compiles its large pattern): the same count as tokenize gives, on written and random
texts."""

from __future__ import annotations

import io
import tokenize

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amp_clipfix.analysis.ast_syntax import ONE_STRING, string_token_count


def tokenize_count(code: str) -> int:
    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return sum(1 for token in tokens if token.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return 0


@pytest.mark.parametrize(
    ("code", "quoted_once"),
    [
        ('"bf16-mixed"', True),
        ("'16'", True),
        ('b"x"', True),
        ("Rb'x'", True),
        ('""', True),
        ('"it\'s"', True),
        ('"a" "b"', False),  # implicit concatenation: two tokens
        ('"a"\n"b"', False),
        ('("a")', True),  # the code of a parenthesised literal keeps its parentheses
        ("( \n 'a'\t)", True),
        ('(("a"))', True),
        ('(("a")', False),
        ('("a"))', False),
        ('("a" "b")', False),
        ('"""a"""', False),
        ('"a\\"b"', False),
        ('Rb"\\d"', False),
    ],
)
def test_the_count_is_tokenizes(code: str, quoted_once: bool) -> None:
    quoted = ONE_STRING.fullmatch(code)
    assert bool(quoted and quoted["open"].count("(") == quoted["close"].count(")")) == quoted_once
    assert string_token_count(code) == tokenize_count(code)


@given(st.text(alphabet="\"'\\\n\r\t\x0c\xa0 abruBR#()", max_size=10))
def test_the_count_is_tokenizes_on_any_text(code: str) -> None:
    assert string_token_count(code) == tokenize_count(code)
