"""`shared_pieces.any_word` reads a text that holds a shared piece only where the piece is
(`held_at_piece`), and looks for the words in the rest of the text past PIECE_PLACES places:
whatever the words and the text, it says what `any(word in text ...)` says."""

from __future__ import annotations

import random

import pytest

from amp_clipfix.sources import shared_pieces
from amp_clipfix.sources.shared_pieces import any_word, held_at_piece

# ACF011's spellings and the clip and autocast words: pieces shared at different offsets.
WORDS = (
    b"clip_grad_norm_",
    b"clip_grad_value_",
    b"gradient_clip_val",
    b"precision=16",
    b"precision: bf16",
    b'"precision": 16',
    b"'precision'] = 16",
    b'"16"',
    b'"bf16"',
    b"cuda.amp",
    b"cpu.amp",
    b"cuda import amp",
    b"cpu import amp",
    b"abcabcabd",  # the piece twice in a word: found at its first place
    b"cabcabd",
)
PIECES = [
    b"precision", b"clip_", b"grad", b"16", b'"', b"'", b"] = ", b": ", b"=", b"bf", b"x\n",
    b"cuda", b"cpu", b".amp", b" import amp", b"abc", b"abd", b"cab", b"c", b"_val", b"norm_",
]  # fmt: skip


def texts(seed: int, count: int) -> list[bytes]:
    chooser = random.Random(seed)
    return [
        b"".join(chooser.choice(PIECES) for _ in range(chooser.randint(0, 70)))
        for _ in range(count)
    ]


@pytest.mark.parametrize("places", [1, 2, 3, shared_pieces.PIECE_PLACES])
def test_any_word_says_what_any_says(monkeypatch: pytest.MonkeyPatch, places: int) -> None:
    monkeypatch.setattr(shared_pieces, "PIECE_PLACES", places)
    test = any_word(WORDS)
    for text in texts(places, 20_000):
        assert test(text) == any(word in text for word in WORDS), text


def test_a_word_is_compared_only_where_its_piece_is() -> None:
    shared = ((b"precision=16", 0), (b'"precision": 16', 1))
    assert held_at_piece(b'x = cfg["precision": 16]', b"precision", shared)
    assert held_at_piece(b"precision=32\nprecision=16\n", b"precision", shared)
    assert not held_at_piece(b"precision=32 16 precision", b"precision", shared)
    assert not held_at_piece(b"no piece here", b"precision", shared)


def test_past_the_places_read_the_words_are_looked_for_in_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shared_pieces, "PIECE_PLACES", 2)
    shared = ((b"xprecision=16", 1),)
    text = b"precision precision precision xprecision=16"
    assert held_at_piece(text, b"precision", shared)
    assert not held_at_piece(b"xprecision=1 precision precision", b"precision", shared)
