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


# Each adapter decides by the path's suffix alone (`handles`): the first answer for a suffix
# stands (asked several times per file and run: 17,000 times on a 2,000-file tree).
_BY_SUFFIX: dict[str, SourceAdapter] = {}


def adapter_for(path: Path) -> SourceAdapter:
    suffix = path.suffix
    found = _BY_SUFFIX.get(suffix)
    if found is None:
        found = _BY_SUFFIX[suffix] = next(a for a in ADAPTERS if a.handles(path))
    return found
