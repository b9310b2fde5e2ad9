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
from amp_clipfix.sources.prefilter import WORD_BYTES, any_word


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


# The texts' bytes under which indexed_holds_any does not pay: its bookkeeping per file costs
# about what the scans it saves do on the Lightning tree (3.1 MB: 7.1 -> 8.7 ms), and it saves a
# third on fairseq (6.9 MB: 26 -> 17 ms) and NeMo (27 MB: 147 -> 104 ms); bench/README.md, pl15.
INDEXED_SCAN_BYTES = 5_000_000


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
    least: int | None = None,
) -> Callable[[Path, bytes], bool] | None:
    """`any(word in data for word in words)`, the same answer for every text, with the word
    index `files_by_word` made from `texts`: a word with a bounded run (`bounded_runs`) is
    looked for in a text of `texts` only when the text's index holds the run (its rarest), if
    that is `most` files or fewer; the other words are scanned in every text, and every word in
    any other text (one not the same bytes as `texts` holds under its path). None when no word
    is taken from the index, or `texts` are fewer than `least` bytes (INDEXED_SCAN_BYTES)."""
    if sum(map(len, texts.values())) < (INDEXED_SCAN_BYTES if least is None else least):
        return None
    scanned: list[bytes] = []
    plan: dict[Path, tuple[bytes, list[bytes]]] = {path: (data, []) for path, data in texts.items()}
    indexed = False
    for word in dict.fromkeys(words):
        lists = [files_by_word.get(run, ()) for run in bounded_runs(word)]
        files = min((list(found) for found in lists), key=len, default=None)
        if files is None or len(files) > most:
            scanned.append(word)
            continue
        indexed = True
        for path in files:
            planned = plan.get(path)
            if planned is not None and word not in planned[1]:
                planned[1].append(word)
    if not indexed:
        return None
    scan, scan_all = any_word(scanned), any_word(words)

    def test(path: Path, data: bytes) -> bool:
        planned = plan.get(path)
        if planned is None or planned[0] is not data:
            return scan_all(data)
        return scan(data) or any(word in data for word in planned[1])

    return test
