"""Whether a text holds one of several words, scanned once for what they all hold.

A search's files are those whose bytes hold one of its words (facts.LazyFiles.with_words), and
every file of the project is scanned for them before any is parsed: for ACF011's twelve
precision spellings that was twelve scans of each of the Lightning tree's 646 files (5.4 MB),
about 0.01 s, for the 19 that hold one. The words all hold `16`, so a file without it holds
none of them: that one scan decides most files, and only the others are scanned word by word.
The same answers, by construction: a text that holds a word holds every part of it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence


@functools.lru_cache(maxsize=256)
def common_part(words: tuple[bytes, ...]) -> bytes:
    """The longest run of bytes every word holds (the first of that length in the shortest
    word); empty when they share none, or for one word (then it is scanned for itself)."""
    if len(words) < 2:
        return b""
    shortest = min(words, key=len)
    for size in range(len(shortest), 0, -1):
        for start in range(len(shortest) - size + 1):
            part = shortest[start : start + size]
            if all(part in word for word in words):
                return part
    return b""


def holds_any(data: bytes, words: Sequence[bytes]) -> bool:
    """`any(word in data for word in words)`, with one scan for what the words share first."""
    common = common_part(tuple(words))
    if common and common not in data:
        return False
    return any(word in data for word in words)
