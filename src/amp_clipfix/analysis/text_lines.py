"""A text's UTF-8 lines, held compactly (a summary keeps its module's lines for the run)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from operator import add
from typing import overload


class TextLines(Sequence[bytes]):
    """A text's UTF-8 lines as `bytes.splitlines()` gives them, held as the one bytes object
    and where each line starts and ends: a list of a million small `bytes` costs about 40
    bytes a line more (a summary keeps its module's lines for the whole run)."""

    __slots__ = ("data", "starts", "ends")

    def __init__(self, data: bytes) -> None:
        self.data = data
        # where each line starts and its text ends (before its line break): 4 bytes under 2 GB
        kind = "i" if len(data) < 2**31 else "q"
        if b"\r" in data:  # a break may be `\r\n` or `\r` alone: each line's own length
            lines = data.splitlines(keepends=True)
            self.starts = array(kind, accumulate(map(len, lines), initial=0))
            self.ends = array(
                kind, map(add, self.starts, map(len, map(bytes.rstrip, lines, repeat(b"\r\n"))))
            )
        else:  # every break is one `\n`: a line starts one byte after the text before it ends
            lengths = list(map(len, data.splitlines()))
            self.starts = array(kind, accumulate(map((1).__add__, lengths), initial=0))
            self.ends = array(kind, map(add, self.starts, lengths))
        self.starts.pop()  # the end of the text

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.data[self.starts[index] : self.ends[index]]

    def word_count(self, word: bytes, first: int, last: int) -> int:
        """How many times lines `first` to `last` (1-based) write `word`."""
        if not self.ends:
            return 0
        end = self.ends[min(max(last, 1), len(self.ends)) - 1]
        return self.data.count(word, self.starts[min(max(first, 1), len(self.ends)) - 1], end)

    def __iter__(self) -> Iterator[bytes]:
        return (self[index] for index in range(len(self)))
