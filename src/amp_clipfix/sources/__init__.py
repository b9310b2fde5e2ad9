"""Source adapters: every file is read, prefiltered and written back through one of these."""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.sources.base import SourceAdapter
from amp_clipfix.sources.notebook import NotebookSource
from amp_clipfix.sources.python import PythonSource
from amp_clipfix.sources.yaml import YamlSource

# The first adapter that handles a path reads it; Python takes whatever is left (a file named
# explicitly is read as Python whatever its suffix).
ADAPTERS: tuple[SourceAdapter, ...] = (NotebookSource(), YamlSource(), PythonSource())


def adapter_for(path: Path) -> SourceAdapter:
    return next(adapter for adapter in ADAPTERS if adapter.handles(path))
