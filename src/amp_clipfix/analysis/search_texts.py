"""The texts a search's list of candidate files tests for its words (project_resolve's
`project_facts`): a file's bytes where its document text is them, a notebook's searchable
text, and the evaluator's word index where one is built."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from amp_clipfix.analysis import recording
from amp_clipfix.analysis.collection import Collection
from amp_clipfix.sources import adapter_for


def same_bytes(text: str, data: bytes | None) -> bytes:
    """`text` in UTF-8 (an unpaired surrogate replaced), as the file's own bytes `data` when
    they are that (most files: a copy of each word file's text held to the run's end is
    ~4 MB on NeMo's)."""
    encoded = text.encode("utf-8", "replace")
    return data if data is not None and data == encoded else encoded


def notebook_code(path: Path, searchable: Mapping[Path, bytes]) -> bytes | None:
    """A notebook's document text in UTF-8 as its searchable text holds it (the same bytes:
    `NotebookSource.searchable` encodes the module text `load` gives its document, made from
    the same file bytes, kept by them in the cache), so a search's list tests it without its
    JSON parsed again (a warm run's searchable comes from the cache: NeMo's rules' list
    parsed 34 notebooks for it); None for any other file."""
    from amp_clipfix.sources.notebook import NotebookSource  # imported by adapter_for already

    if not isinstance(adapter_for(path), NotebookSource):
        return None
    return searchable.get(path)


def indexed_test(
    collection: Collection, words: tuple[bytes, ...]
) -> Callable[[Path, bytes], bool] | None:
    """Whether a file's text holds one of `words`, the evaluator's word index telling which
    words each text it was made from may hold, where that index is built
    (word_scan.indexed_holds_any); None without one."""
    from amp_clipfix.analysis.word_scan import indexed_holds_any

    evaluator = collection.evaluator
    index = None if evaluator is None else evaluator.word_index
    if index is None or index.files_by_word is None:
        return None
    texts = recording.raw(index.contents)  # the texts the index was made from
    return indexed_holds_any(words, texts, index.files_by_word, len(index.position) // 2)
