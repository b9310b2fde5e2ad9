"""The project's text index: which files write a name as a whole word, and the files' order.

The resolution asks, per function, which files can call it (analysis/callers.py): the files that
write its name as a whole word. Asked by scanning every file, N files that each define a factory
cost N * N scans (20,000 files: over ten minutes). This index answers from one pass over the
texts instead, built only once the questions would cost more than the pass: a project that asks
a few names (most of them) scans for those few, as before. The fused relevance asks the names
of whole files at once (relevance.relevant_core: thousands, in several rounds), so it builds
the pass when it runs (`files_by_words`).

Both answers are the same set of files, in the project's order: a whole word (callers.whole_word:
not after or before an ASCII letter, digit or `_`) is exactly one of the maximal runs of those
bytes that the pass splits each text into.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.relevance import WordFiles
from amp_clipfix.patterns import lazy

if TYPE_CHECKING:
    from amp_clipfix.analysis.word_store import WordStore

ASCII_NAME = lazy(rb"[A-Za-z_][A-Za-z0-9_]*")
# Names asked by scanning before the one pass over every text is made: the pass costs about as
# much as forty scans of the project (both grow with its bytes; on a 2,579-file, 27 MB tree the
# pass took 0.39 s of CPU and a scan 7-14 ms; bench/README.md, "Issue 35, cold runs").
SCANS_BEFORE_INDEX = 40


class WordIndex:
    """Files by the whole words they write, over a project's texts (kept in their order)."""

    def __init__(self, contents: Mapping[Path, bytes]) -> None:
        self.contents = contents
        self.position = {path: index for index, path in enumerate(contents)}
        self.scans = 0
        self.files_by_word: Mapping[bytes, list[Path]] | None = None
        self.store: WordStore | None = None  # the index kept in the cache (word_store.py)
        # A cold run has made the pass by now (the relevance did, and a warm run took the
        # relevance's answer from the cache instead): made when first asked, and asked as made.
        self.owed = False

    def in_order(self, paths: Iterable[Path]) -> list[Path]:
        """`paths` that are project files, in the project's order (without scanning it)."""
        position = self.position
        return sorted((path for path in set(paths) if path in position), key=position.__getitem__)

    def naming(self, name: bytes) -> list[Path] | None:
        """The files that write the ASCII identifier `name` as a whole word, from the index;
        None while scanning is cheaper (the caller then scans, as counted here)."""
        if ASCII_NAME.fullmatch(name) is None:
            return None
        if self.files_by_word is None:
            self.scans += 1
            if self.scans <= SCANS_BEFORE_INDEX and not self.owed:
                return None
            self.files_by_word = self.made()
        return self.files_by_word.get(name, [])

    def files_by_words(self) -> Mapping[bytes, list[Path]]:
        """Every word's files, the pass made now if it was not yet: for a search that asks
        the names of whole files at once (relevance.relevant_core)."""
        if self.files_by_word is None:
            self.files_by_word = self.made()
        return self.files_by_word

    def built(self, name: bytes) -> list[Path] | None:
        """The files that write the ASCII identifier `name` as a whole word once the index is
        built (no scan counted); None before, or for another name."""
        if ASCII_NAME.fullmatch(name) is None:
            return None
        if self.files_by_word is None and self.owed:
            self.files_by_word = self.made()
        if self.files_by_word is None:
            return None
        return self.files_by_word.get(name, [])

    def made(self) -> Mapping[bytes, list[Path]]:
        """The pass over every text, or the cache's index brought up to today's texts."""
        if self.store is not None:
            return self.store.index(self.contents)
        return words_of(self.contents)


def words_of(contents: Mapping[Path, bytes]) -> Mapping[bytes, list[Path]]:
    """Each word's files, in the order of `contents` (each word's found when first asked:
    relevance.WordFiles)."""
    return WordFiles(contents.items())
