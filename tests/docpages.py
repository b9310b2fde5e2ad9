"""The README and the documentation site's pages (docs/), as the tests read them: a page's text,
its code blocks, a section under a heading."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def text(name: str) -> str:
    """`README.md`, or a page of the site by its path under docs/ (`commands.md`)."""
    path = REPO / name if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def pages() -> list[Path]:
    """The README and every page of the site."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def code_blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"^ *```{language}\n(.*?)^ *```$", markdown, flags=re.S | re.M)


def section(markdown: str, title: str) -> str:
    """A section, from its heading to the next heading of the same or a higher level (`#` lines
    inside code blocks are not headings)."""
    level = len(title) - len(title.lstrip("#"))
    start = re.search(rf"^{re.escape(title)}$", markdown, flags=re.M)
    assert start, f"no heading {title!r}"
    lines = markdown[start.start() :].splitlines()
    fenced = False
    for number, line in enumerate(lines[1:], start=1):
        fenced ^= line.lstrip().startswith("```")
        heading = re.match(r"(#+) ", line)
        if not fenced and heading and len(heading.group(1)) <= level:
            return "\n".join(lines[:number])
    return "\n".join(lines)
