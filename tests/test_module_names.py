"""A file's module name worked out on its path's text (analysis/module_names.py) is the one
pathlib's `relative_to` and `with_suffix` give: the evaluator's module index (every Python
file, each run that builds it) and the imports it resolves depend on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.analysis.module_names import module_name, path_parts

ROOT = Path("/work/project")


def by_pathlib(root: Path, path: Path) -> tuple[str, bool]:
    parts = path_parts(root, path)
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/work/project/pkg/mod.py", ("pkg.mod", False)),
        ("/work/project/pkg/__init__.py", ("pkg", True)),
        ("/work/project/__init__.py", ("", True)),
        ("/work/project/top.ipynb", ("top", False)),
        ("/work/project/pkg/c.tar.py", ("pkg.c.tar", False)),  # the last suffix only
        ("/work/project/pkg/.hidden", ("pkg..hidden", False)),  # a leading dot: no suffix
        ("/work/project/pkg/x.", ("pkg.x.", False)),  # a trailing dot: no suffix
        ("/work/project/pkg/..py", ("pkg..", False)),
        ("/work/project/pkg/__init__.pyi", ("pkg", True)),
        ("/work/projectile/mod.py", ("mod", False)),  # beside the root, not under it
        ("/elsewhere/mod.py", ("mod", False)),
        ("/work/project", ("project", False)),  # the root itself
    ],
)
def test_a_module_name_is_pathlibs(path: str, expected: tuple[str, bool]) -> None:
    assert module_name(ROOT, Path(path)) == by_pathlib(ROOT, Path(path)) == expected


@pytest.mark.parametrize("root", [Path("/"), Path("relative/root"), Path(".")])
def test_other_roots_give_pathlibs_name(root: Path) -> None:
    path = root / "pkg" / "mod.py"
    assert module_name(root, path) == by_pathlib(root, path) == ("pkg.mod", False)
