"""`check --add-noqa`: a `# noqa: ACFxxx` comment on the line of each finding, as ruff's
`--add-noqa` writes it, so that the next `check` is clean and each suppression is visible.

The comment goes at the end of the finding's line; where that line ends inside a string that
spans lines, or continues with a backslash, it goes at the end of the statement's line that
can hold a comment (as ruff does). A line with a `# noqa: X` comment gets the code added to
it. A file whose result would not parse is not written (an error line). Notebooks and YAML
configurations are left alone with a note: a comment there is not the place for it.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import display_path
from amp_clipfix.patterns import lazy

if TYPE_CHECKING:
    from amp_clipfix.models import Finding

NOQA = lazy(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)


def add_noqa(findings: Sequence[Finding]) -> tuple[int, list[FileError], list[str]]:
    """Write the comments; the number of codes added, the errors, the notes."""
    from amp_clipfix.output.write import WriteError, write_atomic
    from amp_clipfix.sources.text import SourceError, encode_text, read_source

    wanted: dict[Path, dict[int, set[str]]] = {}
    notes: list[str] = []
    for finding in findings:
        site = finding.primary
        if site.cell is not None or site.path.suffix not in (".py", ".pyi"):
            notes.append(
                f"{display_path(site.path)}: no noqa comment added for {finding.code} "
                "(not a Python file); suppress it with `# amp-clipfix: ignore` on a site"
            )
            continue
        wanted.setdefault(site.path, {}).setdefault(site.span.line, set()).add(finding.code)
    added = 0
    errors: list[FileError] = []
    for path, lines in sorted(wanted.items()):
        try:
            source = read_source(path)
        except SourceError as error:
            errors.append(FileError(path, str(error), ErrorKind.READ))
            continue
        text, count = with_comments(source.text, lines)
        if count == 0:
            continue
        try:
            compile(text, str(path), "exec", dont_inherit=True, flags=1024)  # ast only
        except (SyntaxError, ValueError):
            message = "a noqa comment would not give code that parses; not written"
            errors.append(FileError(path, message, ErrorKind.FIX))
            continue
        try:
            write_atomic(source, encode_text(source, text))
        except WriteError as error:
            errors.append(FileError(path, str(error), ErrorKind.WRITE))
            continue
        added += count
    return added, errors, notes


def with_comments(text: str, wanted: dict[int, set[str]]) -> tuple[str, int]:
    """`text` with the codes of `wanted` (line number -> codes) in noqa comments; the number
    of codes added (a code a comment on that line already names is not added again)."""
    lines = text.splitlines(keepends=True)
    moved = comment_lines(text, len(lines))
    per_line: dict[int, set[str]] = {}
    for line, codes in wanted.items():
        per_line.setdefault(moved.get(line, line), set()).update(codes)
    added = 0
    for number, codes in sorted(per_line.items()):
        if not 1 <= number <= len(lines):
            continue
        whole = lines[number - 1]
        body = whole.rstrip("\r\n")
        ending = whole[len(body) :]
        match = NOQA.search(body)
        if match is not None and match.group("codes") is None:
            continue  # a bare noqa comment silences every code already
        present = set(re.split(r"[,\s]+", match.group("codes").upper())) if match else set()
        new = sorted(codes - present)
        if not new:
            continue
        if match is not None:
            listed = ", ".join(sorted(present | set(new)))
            body = f"{body[: match.start()]}# noqa: {listed}{body[match.end() :]}"
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(new)}"
        lines[number - 1] = body + ending
        added += len(new)
    return "".join(lines), added


def comment_lines(text: str, count: int) -> dict[int, int]:
    """Lines that cannot end with a comment (inside a string over several lines, or before a
    backslash continuation) -> the line where the statement can take one."""
    moved: dict[int, int] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return moved
    for token in tokens:
        start, end = token.start[0], token.end[0]
        if end > start and token.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
            for line in range(start, end):
                moved[line] = end
    lines = text.splitlines()
    for line in range(1, count + 1):
        target = moved.get(line, line)
        while 1 <= target <= len(lines) and lines[target - 1].rstrip().endswith("\\"):
            target += 1
        if target != line:
            moved[line] = target
    return moved
