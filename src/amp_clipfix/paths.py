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
# Every folder name one of the rules below needs on the way to a library file.
LIBRARY_NAMES = LIBRARY_DIRS | LIBRARY_PACKAGES | {names[0] for names in LIGHTNING_PACKAGES}


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
    # Folders as strings: a tree of torch's size has thousands of files in a few hundred
    # folders, and a Path's first hash costs more than the whole question about its folder.
    files = list(files)
    parents = [os.path.dirname(os.fspath(path)) for path in files]
    packages = {parent for path, parent in zip(files, parents) if path.name == "__init__.py"}
    folders: dict[str, bool] = {}  # a file's answer is its folder's: asked once per folder
    for parent in parents:
        if parent not in folders:
            folders[parent] = library_folder(parent, packages)
    return {path for path, parent in zip(files, parents) if folders[parent]}


def library_folder(folder: str, packages: set[str]) -> bool:
    """Whether the files of `folder` are library code (library_files), `packages` the folders
    holding an `__init__.py`."""
    path = Path(folder)
    if LIBRARY_NAMES.isdisjoint(path.parts):
        return False  # no folder on the way is named like a library: the common case, free
    if is_library(path / "__init__.py"):  # a module of the folder, by the path rule
        return True
    top = None
    while folder in packages:
        top, folder = folder, os.path.dirname(folder)
    return top is not None and os.path.basename(top) in LIBRARY_PACKAGES
