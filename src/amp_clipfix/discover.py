"""Turn the paths given on the command line into projects and the Python files to process.

Each path belongs to the project whose root is the nearest folder with a project marker; files are
grouped per project so that project-wide settings apply once. Walking never follows symlinked
folders (so link loops cannot hang it) and never leaves the project through a symlinked file.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
SOURCE_SUFFIXES = (".py", ".ipynb", ".yaml", ".yml")  # files found by walking folders

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    "site-packages",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".eggs",
)


@dataclass(frozen=True)
class Project:
    """A project root and its Python files (absolute, sorted, unique)."""

    root: Path
    files: tuple[Path, ...]


@dataclass(frozen=True)
class Discovery:
    """Projects sorted by root, plus one-line errors for paths that could not be used."""

    projects: tuple[Project, ...]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class _Found:
    path: Path
    root: Path
    is_link: bool


def find_project_root(path: Path) -> Path:
    """The nearest folder at or above `path` with a project marker, else `path`'s own folder."""
    absolute = _absolute(path)
    start = absolute if absolute.is_dir() else absolute.parent
    for folder in (start, *start.parents):
        if any(os.path.lexists(folder / marker) for marker in PROJECT_MARKERS):
            return folder
    return start


def discover(paths: Sequence[Path], exclude: Sequence[str] = ()) -> Discovery:
    """Collect the Python files under `paths`, grouped by project; bad paths become error lines.

    Files named explicitly are always kept (any suffix, even if excluded). A file reached twice
    is listed once. Projects that end up with no files are left out.
    """
    globs = tuple(pattern.rstrip("/") for pattern in exclude if pattern.rstrip("/"))
    found: list[_Found] = []
    errors: list[str] = []
    for given in paths:
        absolute = _absolute(given)
        if not absolute.exists():
            kind = "broken symbolic link" if absolute.is_symlink() else "no such file or directory"
            errors.append(f"{given}: {kind}")
        elif absolute.is_dir():
            root = find_project_root(absolute)
            found.extend(_walk(absolute, root, globs, errors))
        elif absolute.is_file():
            root = find_project_root(absolute)
            found.append(_Found(absolute, root, absolute.is_symlink()))
        else:
            errors.append(f"{given}: not a regular file or directory")

    files_by_root: dict[Path, list[Path]] = {}
    for item in _dedupe(found):
        files_by_root.setdefault(item.root, []).append(item.path)
    projects = tuple(
        Project(root=root, files=tuple(sorted(set(files))))
        for root, files in sorted(files_by_root.items())
    )
    return Discovery(projects=projects, errors=tuple(errors))


def _walk(top: Path, root: Path, globs: tuple[str, ...], errors: list[str]) -> list[_Found]:
    """Python files under `top`, iteratively and in sorted order, without following folder links."""
    real_root = Path(os.path.realpath(root))
    found: list[_Found] = []
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            errors.append(f"{folder}: cannot read folder: {_reason(error)}")
            continue
        subfolders: list[Path] = []
        for entry in entries:
            entry_path = Path(entry.path)
            if _is_excluded(entry_path, root, globs):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in DEFAULT_EXCLUDES:
                        subfolders.append(entry_path)
                elif entry.name.endswith(SOURCE_SUFFIXES) and entry.is_file():
                    is_link = entry.is_symlink()
                    if is_link and not _is_inside(Path(os.path.realpath(entry_path)), real_root):
                        continue
                    found.append(_Found(entry_path, root, is_link))
            except OSError as error:
                errors.append(f"{entry_path}: cannot read: {_reason(error)}")
        # Reversed so that popping from the end visits subfolders in sorted order.
        pending.extend(reversed(subfolders))
    return found


def _is_excluded(path: Path, root: Path, globs: tuple[str, ...]) -> bool:
    if not globs:
        return False
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    return any(
        fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(path.name, glob) for glob in globs
    )


def _dedupe(found: list[_Found]) -> list[_Found]:
    """One entry per real file: the first plain path to it, else the first link to it."""
    chosen: dict[str, _Found] = {}
    for item in found:
        real = os.path.realpath(item.path)
        current = chosen.get(real)
        if current is None or (current.is_link and not item.is_link):
            chosen[real] = item
    return list(chosen.values())


def _is_inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _absolute(path: Path) -> Path:
    """Absolute and normalized (`..` removed) without resolving symlinks."""
    return Path(os.path.abspath(path))


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__
