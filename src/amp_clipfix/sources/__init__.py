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
# stands (asked several times per file and run: 17,000 times on a 2,000-file tree), and so does
# the answer for a path, by its text (equal `Path`s may differ in case on Windows, their
# suffixes too): a lookup, not the suffix worked out of the path again (`Path.suffix` is not
# kept: 15,000 asks cost 7 ms of a pre-commit run on fairseq). At most BY_PATH paths are kept.
_BY_SUFFIX: dict[str, SourceAdapter] = {}
_BY_PATH: dict[str, SourceAdapter] = {}
BY_PATH = 100_000


def adapter_for(path: Path) -> SourceAdapter:
    name = str(path)
    found = _BY_PATH.get(name)
    if found is None:
        suffix = path.suffix
        found = _BY_SUFFIX.get(suffix)
        if found is None:
            found = _BY_SUFFIX[suffix] = next(a for a in ADAPTERS if a.handles(path))
        if len(_BY_PATH) >= BY_PATH:
            _BY_PATH.clear()
        _BY_PATH[name] = found
    return found
