"""The word index kept in the cache (issue 35: a warm run pays only the changed files' words).

`word_index.words_of` splits every text of the project into its words: on fairseq (1,021
files, 7 MB) 0.06 s, a tenth of the pre-commit command after a one-line edit, paid for the one
file that changed. Here the index a run makes is stored in the project's cache as one entry,
`words-<sha256 of the build and the root>`: the project's files in their order, each file's
digest, and each word's files as their positions (`array('I')` bytes, ascending). The next run
takes it when its list of files is the same: a file whose digest is the stored one writes the
words it wrote (a file's words are a function of its bytes, and the build is in the name), so
only the changed files are split again, their old positions taken out of the words that held
them and their new words put in. Any other list of files (a file added, removed or renamed),
too many changed files, or an entry that does not load: the index is made from every text, as
without the cache, and stored. A cache is never a source of truth: the index is the one
`words_of` makes of today's texts, position for position (tests/test_word_store.py).

Loaded, the index is decoded one word at a time (`Postings`): a warm run asks a few dozen names
of tens of thousands.
"""

from __future__ import annotations

import bisect
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from amp_clipfix.analysis.relevance import index_of, text_words

if TYPE_CHECKING:
    from amp_clipfix.analysis.cache import Cache

POSITION = "I"  # an unsigned position in the project's order; 4 bytes where the entry is kept
# Beyond this share of the files changed, splitting every text again costs about what updating
# the stored index costs (each changed file's old words are found by a pass over every word).
UPDATED_SHARE = 8
# The index is stored again once a run has split this many texts: a file or two changed since it
# was stored are taken out and split again by every run (a few ms each on fairseq) rather than
# the whole index written (7 ms: a pre-commit hook runs after each edit).
STORED_AFTER = 3


class Postings(Mapping[bytes, list[Path]]):
    """Each word's files, decoded from their packed positions when first asked."""

    def __init__(self, paths: Sequence[Path], packed: dict[bytes, bytes]) -> None:
        self.paths, self.packed = paths, packed
        self.decoded: dict[bytes, list[Path]] = {}

    def __getitem__(self, word: bytes) -> list[Path]:
        files = self.decoded.get(word)
        if files is None:
            positions = unpack(self.packed[word])  # KeyError: not a word of the project
            paths = self.paths
            files = self.decoded[word] = [paths[position] for position in positions]
        return files

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.packed)

    def __len__(self) -> int:
        return len(self.packed)

    def __contains__(self, word: object) -> bool:
        return word in self.packed


def unpack(packed: bytes) -> array[int]:
    positions = array(POSITION)
    positions.frombytes(packed)
    return positions


def positions_of(contents: Mapping[Path, bytes]) -> dict[bytes, list[int]]:
    """Each word's files as positions in the order of `contents` (words_of's pass)."""
    return index_of(enumerate(contents.values()))


class WordStore:
    """The stored index of one project's texts (its cache), loaded and stored once a run."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.key = cache.project_entry("words", sys.byteorder)
        self.split = 0  # texts split into their words this run (for the tests)
        self.wrote = False  # the index was stored (for the tests)
        self.stored: dict[bytes, bytes] = {}  # the stored index, when no file changed

    def index(self, contents: Mapping[Path, bytes]) -> Postings:
        """Today's index of `contents`: the stored one updated for the files changed since,
        else made from every text; stored when it is not the stored one."""
        paths = list(contents)
        names = tuple(map(str, paths))
        digests = tuple(self.cache.digest(data) for data in contents.values())
        packed = self.updated(self.cache.load(self.key), names, digests, contents)
        if packed is None:
            self.split += len(paths)
            packed = {
                word: array(POSITION, files).tobytes()
                for word, files in positions_of(contents).items()
            }
        elif packed is False:
            return Postings(paths, self.stored)  # as stored: nothing changed
        if self.split >= STORED_AFTER:
            self.cache.store(self.key, (names, digests, packed))
            self.wrote = True
        return Postings(paths, packed)

    def updated(
        self,
        stored: object,
        names: tuple[str, ...],
        digests: tuple[bytes, ...],
        contents: Mapping[Path, bytes],
    ) -> dict[bytes, bytes] | Literal[False] | None:
        """The stored index updated for the changed files; False when none changed (then in
        `self.stored`); None when it cannot be used (another list of files, too many changes,
        not an index this module stores)."""
        if array(POSITION).itemsize != 4 or not isinstance(stored, tuple) or len(stored) != 3:
            return None
        then_names, then_digests, packed = stored
        if then_names != names or not isinstance(packed, dict):
            return None
        if not isinstance(then_digests, tuple) or len(then_digests) != len(digests):
            return None
        changed = [i for i, (a, b) in enumerate(zip(then_digests, digests)) if a != b]
        if not changed:
            self.stored = packed
            return False
        if len(changed) * UPDATED_SHARE > len(names):
            return None
        texts = list(contents.values())
        for position in changed:
            self.split += 1
            now = text_words(texts[position])
            mark = array(POSITION, [position]).tobytes()
            before = {
                word
                for word, files in packed.items()
                if mark in files and position in unpack(files)
            }
            for word in before - now:
                positions = unpack(packed[word])
                positions.remove(position)
                if positions:
                    packed[word] = positions.tobytes()
                else:
                    del packed[word]
            for word in now - before:
                positions = unpack(packed.get(word, b""))
                positions.insert(bisect.bisect(positions, position), position)
                packed[word] = positions.tobytes()
        return packed
