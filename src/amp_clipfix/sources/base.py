"""The one interface every kind of source file is read and written through.

A source adapter turns a file's bytes into a `Document` (the exact source plus the text that is
analysed and fixed: a module, a notebook's code cells joined, a YAML config), tells the prefilter
what to read, and turns fixed text back into the file's bytes once it has checked that the
result still parses. Nothing outside an adapter asks what kind of file a path is.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Protocol

from amp_clipfix.records import field, record
from amp_clipfix.sources.text import SourceError, SourceFile

__all__ = [
    "Document",
    "Language",
    "Rendered",
    "SourceAdapter",
    "SourceError",
    "Stage",
    "VerifyError",
]


class Language(str, Enum):
    """What the analysed text is written in, which decides how sites are read from it."""

    PYTHON = "python"
    YAML = "yaml"


class VerifyError(Exception):
    """The fixed text does not parse (or does not make a valid file): it is never written."""


class Stage(str, Enum):
    """The prefilter's stages: a finding needs a fused optimizer, and a Trainer's settings."""

    FUSED_OPTIMIZER = "fused-optimizer"
    TRAINER = "trainer"


@record(frozen=True)
class Document:
    """One file as the analysis sees it.

    `text` is what sites are read from and fixes edit; `locate` maps a line of it to
    (cell, line in that cell) for notebooks, (None, line) elsewhere.
    """

    source: SourceFile
    language: Language
    text: str
    adapter: SourceAdapter = field(compare=False, repr=False)
    layout: object | None = field(default=None, compare=False, repr=False)  # adapter-private

    @property
    def path(self) -> Path:
        return self.source.path

    def locate(self, line: int) -> tuple[int | None, int]:
        return self.adapter.locate(self, line)


@record(frozen=True)
class Rendered:
    """A document's new bytes, and for a notebook the cells that changed (cell, old, new)."""

    data: bytes
    cells: tuple[tuple[int, str, str], ...] = ()


class SourceAdapter(Protocol):
    """Python modules, notebooks and YAML configs, each behind the same five questions."""

    language: Language

    def handles(self, path: Path) -> bool: ...

    def searchable(self, path: Path, data: bytes) -> bytes:
        """What the prefilter reads: the bytes themselves, or a notebook's code."""
        ...

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        """The cheap test for one prefilter stage (see sources/prefilter.py)."""
        ...

    def may_mention(self, data: bytes, word: bytes) -> bool:
        """Whether what the prefilter reads of these raw bytes can contain `word` (an ASCII
        word), asked before any decoding or parsing: false means it cannot."""
        ...

    def load(self, path: Path, data: bytes) -> Document:
        """Decode; SourceError (one line) when the file cannot be read faithfully."""
        ...

    def locate(self, document: Document, line: int) -> tuple[int | None, int]: ...

    def render(self, document: Document, new_text: str, parsed: bool = False) -> Rendered:
        """The file's bytes with `new_text` in place of the document's text; VerifyError when the
        result would not parse or not be a valid file of its kind. `parsed`: the caller has
        checked that the code parses (fixes/elide.py checks the part that changed)."""
        ...
