"""How paths are shown to people and in patches: relative to the current folder, forward slashes.

Every stage that names a file (errors, reports, patches) uses this one function, so a path reads the
same everywhere.
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
