"""`shared_pieces.shared_pieces` counts how many words hold each piece from each word's set of
pieces: the same singles and groups, in the same order, as testing every piece against every
word (the first spelling, kept here as the reference)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.rules import searching_rules
from amp_clipfix.sources.shared_pieces import SHARED_PIECE, any_word, shared_pieces


def reference(
    words: tuple[bytes, ...],
) -> tuple[tuple[bytes, ...], tuple[tuple[bytes, tuple[bytes, ...]], ...]]:
    left = list(words)
    groups: list[tuple[bytes, tuple[bytes, ...]]] = []
    while True:
        best: tuple[int, int, bytes] | None = None
        for word in left:
            for start in range(len(word)):
                for end in range(start + SHARED_PIECE, len(word) + 1):
                    piece = word[start:end]
                    sharing = sum(1 for other in left if piece in other)
                    if sharing > 1 and (best is None or (sharing, len(piece), piece) > best):
                        best = (sharing, len(piece), piece)
        if best is None:
            return tuple(left), tuple(groups)
        piece = best[2]
        groups.append((piece, tuple(word for word in left if piece in word)))
        left = [word for word in left if piece not in word]


RULE_WORDS = tuple(word for rule in searching_rules() for word in rule.words)


def test_the_searching_rules_words_give_the_reference_pieces() -> None:
    """The words a run scans for (every searching rule's, each rule alone, and as
    project_facts passes them: repeated words once)."""
    assert shared_pieces(RULE_WORDS) == reference(RULE_WORDS)
    unique = tuple(dict.fromkeys(RULE_WORDS))
    assert shared_pieces(unique) == reference(unique)
    for rule in searching_rules():
        assert shared_pieces(tuple(rule.words)) == reference(tuple(rule.words))
    singles, groups = shared_pieces(unique)
    assert groups, "the rules' words share pieces (`precision`, `clip_`)"


# Words over a small alphabet share many pieces, ties of count and length included.
WORD = st.binary(min_size=0, max_size=14).map(lambda b: bytes(97 + x % 3 for x in b))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(WORD, st.sampled_from(RULE_WORDS)), max_size=12))
def test_any_words_give_the_reference_pieces(words: list[bytes]) -> None:
    """Random words (repeats, empty words, words inside others) give the same singles and
    groups in the same order, and so the same scan."""
    assert shared_pieces(tuple(words)) == reference(tuple(words))


@given(st.lists(st.sampled_from([*RULE_WORDS, b"abc", b" ", b"16"]), max_size=8))
def test_a_text_holds_a_word_exactly_when_any_says_so(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    assert any_word(RULE_WORDS)(text) == any(word in text for word in RULE_WORDS)
