"""How paths, and what went wrong with them, are shown to people: relative to the current folder,
forward slashes, and the operating system's reason in its own words.

Every stage that names a file (errors, reports, patches) uses these, so a path reads the same
everywhere. Which paths are library code (never a user's site) is a path question too, asked
before anything is parsed.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing's import is not free at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable


def display_path(path: Path) -> str:
    """Paths relative to the current folder with forward slashes, as in the patch."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        relative = str(path)
    return relative.replace(os.sep, "/")


def os_error_reason(error: OSError) -> str:
    """`Permission denied`, not `[Errno 13] Permission denied: '/x'` (the path is said apart)."""
    return error.strerror or str(error) or type(error).__name__


EXCERPT_CHARS = 60


def excerpt(text: str, limit: int = EXCERPT_CHARS, quoted: bool = True) -> str:
    """Text read from a file, as a message quotes it: `repr`'s escapes (no control character,
    line break or bidirectional override reaches a terminal raw) and at most `limit`
    characters, so that a file that is not what it seems is never dumped into a message.
    `quoted=False` for a parser's own message about the file (escaped, without quotes)."""
    shown = repr(text[:limit])
    if not quoted:
        shown = shown[1:-1]
    return shown if len(text) <= limit else f"{shown}... ({len(text)} characters)"


LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})
# The top-level packages of the libraries the analysis models (analysis/names.py's roots): a
# module of one of them is the library's own code, never the user's. Here, not in the registry,
# because the run decides it before anything but the standard library is imported.
LIBRARY_PACKAGES = frozenset({"lightning", "pytorch_lightning", "lightning_fabric", "torch"})
LIGHTNING_PACKAGES: tuple[tuple[str, ...], ...] = (
    ("lightning", "pytorch"),
    ("lightning", "fabric"),
    ("pytorch_lightning",),
    ("lightning_fabric",),
)


def is_library(path: Path) -> bool:
    """Code under site-packages, or inside Lightning's own package, is never a user site."""
    parts = path.parts
    if LIBRARY_DIRS & set(parts):
        return True
    for package in LIGHTNING_PACKAGES:
        width = len(package)
        for index in range(len(parts) - width):
            if tuple(parts[index : index + width]) == package:
                return True
    return False


def library_files(files: Iterable[Path]) -> set[Path]:
    """The files that are a library's own code: `is_library`'s, and every module whose
    qualified name starts with one of LIBRARY_PACKAGES as Python imports it. A file's package
    is the chain of folders above it that hold an `__init__.py` among the project's files; the
    outermost one is its top-level package (the folder above it is the import root, as `src/`
    is). So `torch/amp/grad_scaler.py` of a tree holding torch's sources is `torch.amp.
    grad_scaler` (library), while `ray/train/torch/x.py` (`ray` a package) and `mylib/torch/
    utils.py` (`mylib` a package) are the project's own. A lone module named like a library
    (`torch.py` in no package) is left to the project: it cannot be the library's package."""
    files = list(files)
    packages = {path.parent for path in files if path.name == "__init__.py"}
    found: set[Path] = set()
    for path in files:
        if is_library(path):
            found.add(path)
            continue
        if LIBRARY_PACKAGES.isdisjoint(path.parts[:-1]):
            continue  # no folder on the way is named like a library: the common case, free
        folder, top = path.parent, None
        while folder in packages:
            top, folder = folder, folder.parent
        if top is not None and top.name in LIBRARY_PACKAGES:
            found.add(path)
    return found
