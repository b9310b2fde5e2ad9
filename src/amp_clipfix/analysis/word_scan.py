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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from amp_clipfix.analysis.relevance import NOT_WORD_TO_SPACE
from amp_clipfix.sources.prefilter import WORD_BYTES
from amp_clipfix.sources.shared_pieces import any_word


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
    if common and data.find(common) < 0:  # find, not `in`: see prefilter.holds
        return False
    return any(data.find(word) >= 0 for word in words)


def bounded_runs(word: bytes) -> list[bytes]:
    """The runs of identifier bytes inside `word` with another byte on each side within it
    (`fit` of `.fit(`, `bf16` of `"bf16"`; none in `cuda.amp`): a text that holds `word` writes
    each of them as a whole word, one of the word index's words for that text."""
    runs = word.translate(NOT_WORD_TO_SPACE).split()  # as relevance.index_of splits
    if runs and word[0] in WORD_BYTES:
        runs = runs[1:]
    if runs and word[-1] in WORD_BYTES:
        runs = runs[:-1]
    return runs


def indexed_holds_any(
    words: Sequence[bytes],
    texts: Mapping[Path, bytes],
    files_by_word: Mapping[bytes, Iterable[Path]],
    most: int,
) -> Callable[[Path, bytes], bool] | None:
    """`any(word in data for word in words)`, the same answer for every text, with the word
    index `files_by_word` made from `texts`: a word with a bounded run (`bounded_runs`) is
    looked for only in the texts whose index holds the run (its rarest), if that is `most`
    files or fewer; the other words are scanned in every text, and every word in any other text
    (one not the same bytes as `texts` holds under its path). None when no word is taken from
    the index."""
    scanned: list[bytes] = []
    found: set[Path] = set()  # the texts holding a word taken from the index
    indexed = False
    for word in dict.fromkeys(words):
        lists = [files_by_word.get(run, ()) for run in bounded_runs(word)]
        files = min((list(holders) for holders in lists), key=len, default=None)
        if files is None or len(files) > most:
            scanned.append(word)
            continue
        indexed = True
        found.update(p for p in files if p not in found and texts[p].find(word) >= 0)
    if not indexed:
        return None
    scan, scan_all = any_word(scanned), any_word(words)

    def test(path: Path, data: bytes) -> bool:
        if texts.get(path) is not data:
            return scan_all(data)
        return path in found or scan(data)

    return test
