"""A project file's dotted module name, as Python imports it from the project's root.

Asked for every Python file of the project each time a run builds its evaluator (the module
index: 2,675 files on NeMo, ~37 ms through pathlib's `relative_to` and `with_suffix`), so it is
worked out on the path's text where that text says it all: a POSIX path under the root, as
`str(Path)` normalises it. Anything else (another separator, a root that ends with one, a path
outside the root) goes through pathlib, which gives the same name for the plain case.
"""

from __future__ import annotations

import os
from pathlib import Path


def module_name(root: Path, path: Path) -> tuple[str, bool]:
    """`path`'s dotted name under `root` (its last suffix dropped, `__init__` its package's),
    and whether it is a package's `__init__`."""
    top, text = str(root), str(path)
    if os.sep == "/" and not top.endswith("/") and text.startswith(top + "/"):
        parts = text[len(top) + 1 :].split("/")
        name = parts[-1]
        dot = name.rfind(".")
        if 0 < dot < len(name) - 1:  # pathlib's suffix: a dot neither first nor last
            parts[-1] = name[:dot]
    else:
        parts = path_parts(root, path)
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def path_parts(root: Path, path: Path) -> list[str]:
    """The parts of `path` under `root`, its suffix dropped, through pathlib (its stem alone
    outside the root)."""
    try:
        return list(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        return [path.stem]
