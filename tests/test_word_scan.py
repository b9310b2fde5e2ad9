"""word_scan.holds_any gives `any(word in data for word in words)`'s answer: on every search's
words (the rules' and their gates'), on texts made of those words' pieces, and on random
bytes; and a text without what the words share is scanned for nothing else."""

from __future__ import annotations

import random

import pytest

from amp_clipfix.analysis.word_scan import common_part, holds_any
from amp_clipfix.rules import RULES

WORD_SETS = [
    (b"precision=16", b"precision = 16", b"precision: 16", b'"bf16"', b"'16'"),
    (b"cuda.amp", b"cpu.amp", b"cuda import amp", b"cpu import amp"),
    (b"clip_grad_norm_", b"clip_grad_value_"),
    (b"manual_backward",),
    (b"ab", b"cd"),
    (b"x", b"xy", b"yx"),
    (),
    *(rule.words for rule in RULES.values() if rule.words),
]


def texts(words: tuple[bytes, ...], rng: random.Random) -> list[bytes]:
    pieces = [w[i:j] for w in words for i in range(len(w)) for j in range(i + 1, len(w) + 1)]
    pieces += [b" ", b"\n", b"16", b"amp", b"\xef\xbd\x90", b"_"]
    made = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    made += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(100)]
    return made + list(words) + [b""]


@pytest.mark.parametrize("words", WORD_SETS, ids=[b"|".join(w).decode() for w in WORD_SETS])
def test_the_answer_is_any_word_in_the_text(words: tuple[bytes, ...]) -> None:
    rng = random.Random(35)
    for data in texts(words, rng):
        assert holds_any(data, words) == any(word in data for word in words), data


def test_what_the_words_share() -> None:
    assert common_part((b"precision=16", b'"bf16"', b"'16'")) == b"16"
    assert common_part((b"cuda.amp", b"cpu import amp")) == b"amp"
    assert common_part((b"clip_grad_norm_", b"clip_grad_value_")) == b"clip_grad_"
    assert common_part((b"ab", b"cd")) == b""
    assert common_part((b"manual_backward",)) == b""  # one word is scanned for itself


def test_a_text_without_the_shared_part_is_not_scanned_word_by_word() -> None:
    class Counted(bytes):
        scans = 0

        def find(self, part: bytes, *where: int) -> int:  # type: ignore[override]
            Counted.scans += 1
            return super().find(part, *where)

    words = (b"precision=16", b"precision = 16", b'"16"', b"'16'")
    assert not holds_any(Counted(b"precision=32 and bf32"), words)
    assert Counted.scans == 1
