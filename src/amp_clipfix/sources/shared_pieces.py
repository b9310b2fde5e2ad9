"""Words looked for through the pieces they share (`any_word`): a text that holds none of a
piece's words is scanned once for the piece, not once per word. The analysis's text tests ask
many words of every file this way; a run that analyses nothing never imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

# The shortest piece several words share that is looked for before them (shorter pieces, such as
# `amp` of `amp_level` and `cuda.amp`, are in most files of a big tree: no text is skipped). 4,
# not 5, since a text holding the piece is read only where it is (held_at_piece): `.amp` of
# `cuda.amp` and `cpu.amp`, `16"` of `"16"` and `"bf16"` save a scan of most texts.
SHARED_PIECE = 4


@functools.lru_cache(maxsize=8)
def shared_pieces(
    words: tuple[bytes, ...],
) -> tuple[tuple[bytes, ...], tuple[tuple[bytes, tuple[bytes, ...]], ...]]:
    """The words no piece groups, and each piece with the words it is in: the piece in the
    most words first (the longest, then the greatest, among equals), until none is in two.
    A piece is in a word exactly when it is one of the word's pieces, so how many words hold
    each piece is counted from each word's set of pieces (made once), not by testing every
    piece against every word (6 ms for the 26 words of the Lightning tree's rules)."""
    left = list(words)
    groups: list[tuple[bytes, tuple[bytes, ...]]] = []
    pieces = {
        word: {
            word[start:end]
            for start in range(len(word))
            for end in range(start + SHARED_PIECE, len(word) + 1)
        }
        for word in left
    }
    while True:
        sharing: dict[bytes, int] = {}
        for word in left:
            for piece in pieces[word]:
                sharing[piece] = sharing.get(piece, 0) + 1
        best = max(((n, len(p), p) for p, n in sharing.items() if n > 1), default=None)
        if best is None:
            return tuple(left), tuple(groups)
        piece = best[2]
        groups.append((piece, tuple(word for word in left if piece in word)))
        left = [word for word in left if piece not in word]


def any_word(words: Iterable[bytes]) -> Callable[[bytes], bool]:
    """`lambda data: any(word in data for word in words)`, with fewer scans of the texts that
    hold none (most of a big tree): words that share a piece of SHARED_PIECE bytes or more
    (`precision` of ACF011's eight spellings, `clip_` of `clip_grad_norm_` and
    `gradient_clip_val`) are looked for only in the texts that hold the piece. Each text holds
    a word exactly when `any` says it does; on torch + lightning, 13 scans of a text that holds
    none instead of 25."""
    singles, groups = shared_pieces(tuple(dict.fromkeys(words)))
    placed = tuple(
        (piece, tuple((word, word.find(piece)) for word in shared)) for piece, shared in groups
    )

    def test(data: bytes) -> bool:
        return any(data.find(word) >= 0 for word in singles) or any(  # find: see prefilter.holds
            held_at_piece(data, piece, shared) for piece, shared in placed
        )

    return test


# The places of a piece a text is read at for the words holding it (held_at_piece) before the
# words are looked for in the whole text instead: each place costs a few comparisons, a word's
# scan of the text a pass over it.
PIECE_PLACES = 16


def held_at_piece(data: bytes, piece: bytes, shared: tuple[tuple[bytes, int], ...]) -> bool:
    """Whether the text holds one of the words that hold `piece` (each with where the piece
    first starts in it): a word in the text has the piece at that offset, so only where the
    piece is is a word compared (one scan of the text, not one per word: `precision` is in
    every config of a tree, ACF011's eight spellings in few). Past PIECE_PLACES places of the
    piece, each word is looked for in the text after the places read."""
    start = data.find(piece)
    places = 0
    while start >= 0:
        for word, offset in shared:
            if start >= offset and data.startswith(word, start - offset):
                return True
        places += 1
        if places == PIECE_PLACES:
            return any(data.find(word, max(0, start - offset + 1)) >= 0 for word, offset in shared)
        start = data.find(piece, start + 1)
    return False
