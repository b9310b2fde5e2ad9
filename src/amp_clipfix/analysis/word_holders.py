"""The candidate files that hold a search's words, unparsed (`facts.LazyFiles.with_words`
parses each; candidate_answers.py may answer one from an earlier entry instead)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# What the listing found of a file: not one of the words, refused by the test, let through
NO_WORD, REFUSED, PASSES = 0, 1, 2


def holders(
    lazy: Any,
    words: tuple[bytes, ...],
    where: Any,
    known: Mapping[str, int] | None = None,
    seen: dict[str, int] | None = None,
) -> Iterator[Path]:
    """The candidates of `lazy` (a `facts.LazyFiles`) whose text holds one of `words` and
    passes `where`, by path; the list is noted as a read when first asked. `known`: what an
    earlier listing found of files whose bytes are as they were then (a function of the path
    and text: not tested again); `seen`, filled with what this one finds of each file."""
    lazy.noted.words(words, where)
    refused = lazy.questions.asked(words, where)
    for path in sorted({*lazy.candidates, *lazy.loaded}, key=str):
        found = None if known is None else known.get(str(path))
        if found is None:
            loaded = lazy.loaded.get(path)
            data = loaded.data if loaded is not None else lazy.text(path)
            # word_scan.py: the same answer; the file's text is its document's either way
            if data is None or not lazy.questions.holds(path, data, words):
                found = NO_WORD
            else:
                found = REFUSED if where is not None and not where(path, data) else PASSES
        if seen is not None:
            seen[str(path)] = found
        if found == REFUSED:
            refused.add(path)
        elif found == PASSES:
            yield path
