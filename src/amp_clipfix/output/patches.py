"""Plain patches as files to keep and apply: each file's patch is preceded by what it fixes and
how safe that is, on `#` lines that `git apply` and `patch` skip as commentary, and paths are
always valid for both (never `a/../x`).

Headers are traditional (`---`/`+++`, no `diff --git`): git then reads the paths relative to the
folder it runs in, so `git -C PROJECT apply` works for a project that is a sub-folder of a
repository too, and `patch -p1 -d PROJECT` reads them the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.output.diff import format_patch
from amp_clipfix.output.report import site_prefix
from amp_clipfix.paths import display_path
from amp_clipfix.patterns import lazy

if TYPE_CHECKING:  # only its type is named here
    from amp_clipfix.results import FileChange

UNSAFE_TEXT = lazy(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# How a `--patch-dir` patch starts (writing.patch_header): what tells a patch amp-clipfix wrote,
# which a later run may remove when its project has nothing to fix any more.
PATCH_MARK = b"# amp-clipfix: the fixes of project "


def comment(text: str) -> bytes:
    """One `# ` line: control characters (newlines included) become spaces, so the line can
    never be read as part of a patch or reach a terminal raw."""
    return b"# " + UNSAFE_TEXT.sub(" ", text).strip().encode("utf-8", "backslashreplace") + b"\n"


def change_notes(change: FileChange) -> bytes:
    lines = []
    for finding in change.findings:
        span = finding.primary.shown_span
        where = f"{site_prefix(finding.primary)}:{span.line}:{span.column + 1}"
        lines.append(comment(f"{finding.code} {where}: {finding.message}"))
        if finding.fix is not None:
            label = "safe" if finding.fix.safe else "unsafe"
            fix = f"fix ({finding.fix.strategy.value}): {label}: {finding.fix.safety}"
            lines.append(comment(fix))
    return b"".join(lines)


def relative_to(path: Path, base: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(base)).replace(os.sep, "/")


def patch_of(change: FileChange, base: Path | None = None) -> bytes:
    """The notes, then the patch of one file with its path relative to `base` (default: the
    current folder)."""
    path = (
        display_path(change.source.path) if base is None else relative_to(change.source.path, base)
    )
    patch = format_patch(change.source.data, change.new_data, path, created=change.created)
    return change_notes(change) + patch if patch else b""


def is_below(path: Path, folder: Path) -> bool:
    relative = relative_to(path, folder)
    return relative != ".." and not relative.startswith("../")


def patch_with_base(changes: Sequence[FileChange], roots: Mapping[Path, Path]) -> bytes:
    """One patch for all changes. Paths are relative to the current folder when every file lies
    below it; otherwise to the folder holding all their projects, named in a first line."""
    if all(is_below(change.source.path, Path.cwd()) for change in changes):
        return b"".join(patch_of(change) for change in changes)
    folders = [
        os.path.abspath(roots.get(change.source.path, change.source.path.parent))
        for change in changes
    ]
    base = Path(os.path.commonpath(folders))
    shown = display_path(base)
    header = comment(
        f"paths are relative to {shown}: git -C {shown} apply PATCH, or patch -p1 -d {shown}"
    )
    return header + b"".join(patch_of(change, base) for change in changes)


def project_patch_names(roots: Sequence[Path]) -> list[str]:
    """`<folder name>.patch` per project; a name taken twice gets its parent folder's name
    in front, then a number, so every project keeps its own file."""
    names: list[str] = []
    taken: set[str] = set()
    counts: dict[str, int] = {}
    for root in roots:
        counts[root.name] = counts.get(root.name, 0) + 1
    for root in roots:
        stem = root.name or "project"
        if counts.get(root.name, 0) > 1 and root.parent.name:
            stem = f"{root.parent.name}-{stem}"
        candidate, number = stem, 1
        while candidate.lower() in taken:
            number += 1
            candidate = f"{stem}-{number}"
        taken.add(candidate.lower())
        names.append(f"{candidate}.patch")
    return names
