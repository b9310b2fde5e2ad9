"""How paths, and what went wrong with them, are shown to people: relative to the current folder,
forward slashes, and the operating system's reason in its own words.

Every stage that names a file (errors, reports, patches) uses these, so a path reads the same
everywhere. Which paths are library code (never a user's site) is a path question too, asked
before anything is parsed.
"""

from __future__ import annotations

import os
from pathlib import Path


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
