"""reviewdog's Diagnostic Format (rdjson), shaped so that every finding reaches a pull request as
something a reviewer can accept in one step.

reviewdog's GitHub reviewer posts a suggestion only when it replaces the very lines the comment
sits on, one block per comment (service/github/github.go, `buildSingleSuggestion`), and its
`-filter-mode=added` keeps a diagnostic only when a line of its own `location` was changed
(filter/filter.go: `related_locations` are not looked at). Hence:

- a fix whose edits fit one block of whole lines (in one file, with at most
  `MAX_UNCHANGED_LINES` unchanged lines between them) is **one** line-based suggestion holding
  the block's full new text, and the diagnostic that carries it sits on exactly those lines;
- any other fix (a helper inserted at the top and the call changed below, edits in two files)
  is the full unified patch in the message, never a partial suggestion that would leave the bug;
- a finding is reported **once per site** (precision, optimizer, clip), each diagnostic naming
  the others as `related_locations`, so whichever line a pull request changes keeps it. A pull
  request that changes two sites of one finding gets two comments: the price of not losing it.

Columns are UTF-8 byte offsets, reviewdog's rule (proto/rdf/reviewdog.proto, `Position`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amp_clipfix import observed
from amp_clipfix.models import Edit, Finding, Site
from amp_clipfix.output.diff import format_patch
from amp_clipfix.output.locations import file_span
from amp_clipfix.paths import display_path
from amp_clipfix.records import replace
from amp_clipfix.sources.text import SourceError, decode_source

__all__ = [
    "MAX_UNCHANGED_LINES",
    "FileLines",
    "LineBlock",
    "fix_patch",
    "one_block",
    "site_diagnostics",
]

# A suggestion may carry this many unchanged lines between two edits and still read as one fix.
MAX_UNCHANGED_LINES = 3


@dataclass(frozen=True)
class LineBlock:
    """Lines `first`..`last` (1-based, inclusive) of `path` replaced by `text` (no final line
    ending: reviewdog adds it), the form GitHub's "Commit suggestion" applies."""

    path: Path
    first: int
    last: int
    text: str


def split_text_lines(text: str) -> list[str]:
    """Lines with their endings, split after each "\\n" as the diff (and git) sees them."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class FileLines:
    """Each file's lines as it is on disk now (before `apply` writes), read once per report
    through `observed`; None when it is absent or cannot be decoded."""

    def __init__(self) -> None:
        self._read: dict[Path, list[str] | None] = {}

    def __call__(self, path: Path) -> list[str] | None:
        if path not in self._read:
            try:
                text = decode_source(path, observed.read_bytes(path)).text
                self._read[path] = split_text_lines(text)
            except (OSError, SourceError):
                self._read[path] = None
        return self._read[path]


def _old_lines(edit: Edit) -> tuple[int, int]:
    """The whole lines an edit replaces: (first line, count); an insertion has count 0."""
    return edit.span.line, edit.span.end_line - edit.span.line


def apply_edits(lines: Sequence[str], edits: Sequence[Edit]) -> str:
    """The text after the whole-line `edits` (sorted, not overlapping) replace their lines."""
    out: list[str] = []
    position = 1
    for edit in edits:
        first, count = _old_lines(edit)
        out.extend(lines[position - 1 : first - 1])
        out.append(edit.replacement)
        position = first + count
    out.extend(lines[position - 1 :])
    return "".join(out)


def one_block(edits: Sequence[Edit], file_lines: FileLines) -> LineBlock | None:
    """The fix as one block of whole lines, or None when it does not fit one (several files,
    edits far apart, a file that cannot be read again)."""
    if not edits or any(edit.path != edits[0].path for edit in edits):
        return None
    lines = file_lines(edits[0].path)
    if not lines:
        return None
    first = min(_old_lines(edit)[0] for edit in edits)
    last = max(line + max(count, 1) - 1 for line, count in map(_old_lines, edits))
    replaced = sum(_old_lines(edit)[1] for edit in edits)
    if last - first + 1 - replaced > MAX_UNCHANGED_LINES:
        return None
    if last > len(lines):  # an insertion at the end: the block takes the last line too
        first, last = min(first, len(lines)), len(lines)
    text = apply_edits(lines[first - 1 : last], _shifted(edits, first - 1))
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    elif last == len(lines) and lines[-1].endswith("\n"):
        return None  # the block would end without the file's last line ending
    return LineBlock(edits[0].path, first, last, text)


def _shifted(edits: Sequence[Edit], by: int) -> list[Edit]:
    return [
        replace(
            edit,
            span=replace(edit.span, line=edit.span.line - by, end_line=edit.span.end_line - by),
        )
        for edit in edits
    ]


def fix_patch(edits: Sequence[Edit], file_lines: FileLines) -> str | None:
    """The fix's own unified patch (paths relative to the current folder, `git apply` takes
    it), None when a file it edits cannot be read again."""
    by_path: dict[Path, list[Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    parts = []
    for path in sorted(by_path, key=display_path):
        lines = file_lines(path)
        created = lines is None and not observed.exists(path)
        if lines is None and not created:
            return None
        old = "".join(lines or [])
        new = apply_edits(lines or [], by_path[path])
        patch = format_patch(
            old.encode("utf-8", "surrogateescape"),
            new.encode("utf-8", "surrogateescape"),
            display_path(path),
            created=created,
        )
        parts.append(patch.decode("utf-8", "replace"))
    return "".join(parts) or None


def byte_column(lines: list[str] | None, line: int, column: int) -> int:
    """The 1-based UTF-8 byte column of character `column` (0-based) of `line`."""
    if lines is None or not 1 <= line <= len(lines):
        return column + 1
    return len(lines[line - 1][:column].encode("utf-8", "surrogatepass")) + 1


def _position(line: int, column: int | None = None) -> dict[str, int]:
    return {"line": line} if column is None else {"line": line, "column": column}


def site_range(site: Site, file_lines: FileLines) -> dict[str, Any]:
    """A site's range: UTF-8 byte columns, end exclusive; a notebook site covers whole file
    lines (its columns are the cell's, not the JSON file's)."""
    in_file = file_span(site)
    if in_file is not None:
        return {"start": _position(in_file.line), "end": _position(in_file.end_line)}
    span, lines = site.span, file_lines(site.path)
    return {
        "start": _position(span.line, byte_column(lines, span.line, span.column)),
        "end": _position(span.end_line, byte_column(lines, span.end_line, span.end_column)),
    }


def located(site: Site, file_lines: FileLines) -> dict[str, Any]:
    """An rdjson `Location`: the display path and the site's range."""
    return {"path": display_path(site.path), "range": site_range(site, file_lines)}


def _site_lines(site: Site) -> tuple[int, int]:
    span = file_span(site) or site.span
    return span.line, span.end_line


def _fence(text: str) -> str:
    ticks = 3
    while "`" * ticks in text:
        ticks += 1
    return "`" * ticks


def _patch_note(finding: Finding, patch: str) -> str:
    assert finding.fix is not None
    label = "safe" if finding.fix.safe else "unsafe"
    fence = _fence(patch)
    return (
        f"\n\nFix ({finding.fix.strategy.value}, {label}): {finding.fix.safety}\n"
        f"Apply it with `git apply` (or `amp-clipfix apply`):\n\n{fence}diff\n{patch}{fence}"
    )


def _suggestion(block: LineBlock) -> dict[str, Any]:
    lines = {"start": _position(block.first), "end": _position(block.last)}
    return {"range": lines, "text": block.text}


def site_diagnostics(
    finding: Finding,
    edits: Sequence[Edit],
    message: str,
    base: dict[str, Any],
    file_lines: FileLines,
) -> list[dict[str, Any]]:
    """One diagnostic per distinct site of the finding (the primary first), each with the
    other sites as `related_locations`. The diagnostic on the lines of a one-block fix carries
    the suggestion (on exactly the block's lines); every other one carries the fix's patch in
    its message, so each of them alone is enough to fix the finding."""
    sites: list[Site] = []
    seen: set[tuple[Path, int, int]] = set()
    for site in (finding.primary, *finding.sites):
        key = (site.path, *_site_lines(site))
        if key not in seen:
            seen.add(key)
            sites.append(site)
    if finding.fix is not None and finding.fix.leftover:  # never let a partial fix pass as whole
        left = "; ".join(
            f"{display_path(site.path)}:{site.shown_span.line} {site.detail}"
            for site in finding.fix.leftover
        )
        message += f"\n\nThe fix is partial: left for a person: {left}."
    block = one_block(edits, file_lines) if finding.fix is not None else None
    patch = fix_patch(edits, file_lines) if finding.fix is not None and edits else None
    with_patch = message + _patch_note(finding, patch) if patch else message

    def inside(site: Site) -> bool:
        first, last = _site_lines(site)
        return (
            block is not None
            and site.path == block.path
            and block.first <= first
            and last <= block.last
        )

    carrier = next((site for site in sites if inside(site)), None)
    diagnostics = []
    for site in sites:
        location = located(site, file_lines)
        diagnostic: dict[str, Any] = {"message": with_patch, "location": location, **base}
        if site is carrier and block is not None:
            diagnostic["message"] = message
            if _site_lines(site) != (block.first, block.last) or site.cell is not None:
                # GitHub posts a suggestion only on the comment's own lines
                location["range"] = _suggestion(block)["range"]
            diagnostic["suggestions"] = [_suggestion(block)]
        related = [
            {
                "message": f"{other.kind.role}: {other.detail}",
                "location": located(other, file_lines),
            }
            for other in sites
            if other is not site
        ]
        if related:
            diagnostic["related_locations"] = related
        diagnostics.append(diagnostic)
    if block is not None and carrier is None:  # the edit is on no site's lines: its own comment
        location = {"path": display_path(block.path), **_suggestion(block)}
        location.pop("text")
        diagnostics.append(
            {"message": message, "location": location, **base, "suggestions": [_suggestion(block)]}
        )
    return diagnostics
