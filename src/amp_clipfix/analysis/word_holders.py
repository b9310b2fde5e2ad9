"""The candidate files that hold a search's words, unparsed (`facts.LazyFiles.with_words`
parses each; candidate_answers.py may answer one from an earlier entry instead)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


def holders(lazy: Any, words: tuple[bytes, ...], where: Any) -> Iterator[Path]:
    """The candidates of `lazy` (a `facts.LazyFiles`) whose text holds one of `words` and
    passes `where`, by path; the list is noted as a read when first asked."""
    lazy.noted.words(words, where)
    refused = lazy.questions.asked(words, where)
    for path in sorted({*lazy.candidates, *lazy.loaded}, key=str):
        loaded = lazy.loaded.get(path)
        data = loaded.data if loaded is not None else lazy.text(path)
        # word_scan.py: the same answer; the file's text is its document's either way
        if data is not None and lazy.questions.holds(path, data, words):
            if where is not None and not where(path, data):
                refused.add(path)
            else:
                yield path
