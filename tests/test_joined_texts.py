"""The prefilter asks a word of many texts at once (sources/prefilter.texts_hold_any): the texts
whose `mentions` is `holds` (a Python module's, a YAML config's: the bytes themselves) are
joined by line breaks, which no word holds, and each word is looked for once per joined text;
a notebook's test is asked after the texts before it, as `any` asks it. The answers are those
of asking each text each word."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amp_clipfix.sources import adapter_for, prefilter
from amp_clipfix.sources.prefilter import (
    FUSED_WORD,
    LEGACY_PRECISION_WORDS,
    SEARCH_WORDS,
    holds,
    json_may_contain,
    texts_hold_any,
)


def test_no_word_asked_of_joined_texts_holds_a_line_break() -> None:
    assert all(b"\n" not in word for word in (*SEARCH_WORDS, *LEGACY_PRECISION_WORDS, FUSED_WORD))


def test_the_adapters_that_read_the_bytes_themselves_mention_by_holds() -> None:
    """A module's and a config's test is `holds` itself, so their texts are joined; a
    notebook's (its JSON read for its code) is not."""
    assert adapter_for(Path("a.py")).may_mention is holds
    assert adapter_for(Path("c.yaml")).may_mention is holds
    assert adapter_for(Path("n.ipynb")).may_mention is not holds


PIECES = [b"clip_", b"grad_norm_", b"precision", b"=16", b"\n", b"fused", b"x", b'"\\u0041"']
WORDS = [b"clip_grad_norm_", b"precision=16", b"fused", b"x", b"A"]


@given(
    texts=st.lists(
        st.tuples(st.lists(st.sampled_from(PIECES), max_size=5), st.booleans()), max_size=8
    ),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    joined=st.sampled_from([1, 8, 30, 1 << 16]),
)
def test_joined_texts_answer_as_each_text_asked_in_order(
    texts: list[tuple[list[bytes], bool]], words: list[bytes], joined: int
) -> None:
    asked: list[bytes] = []

    def notebook(data: bytes, word: bytes) -> bool:
        asked.append(data)
        return json_may_contain(data, word)

    given_texts = [(b"".join(pieces), notebook if kind else holds) for pieces, kind in texts]
    expected_asked: list[bytes] = []
    expected = False
    for data, mentions in given_texts:  # `any` over the texts, in order
        if mentions is notebook:
            expected_asked.append(data)
        if any(json_may_contain(data, w) if mentions is notebook else w in data for w in words):
            expected = True
            break
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "JOINED_BYTES", joined)
        answer = texts_hold_any(given_texts, tuple(words))
    assert answer is expected
    assert sorted(set(asked)) == sorted(set(expected_asked))


def test_a_word_across_two_joined_texts_is_in_neither() -> None:
    texts = [(b"x = clip_", holds), (b"grad_norm_(p)", holds)]
    assert not texts_hold_any(texts, (b"clip_grad_norm_",))
    assert texts_hold_any([*texts, (b"clip_grad_norm_", holds)], (b"clip_grad_norm_",))


def test_a_notebook_is_asked_only_when_no_text_before_it_holds_a_word() -> None:
    asked: list[bytes] = []

    def notebook(data: bytes, word: bytes) -> bool:
        asked.append(data)
        return json_may_contain(data, word)

    assert texts_hold_any([(b"fused", holds), (b"{}", notebook)], (FUSED_WORD,))
    assert asked == []
    assert not texts_hold_any([(b"x", holds), (b"{}", notebook), (b"y", holds)], (FUSED_WORD,))
    assert asked == [b"{}"]
