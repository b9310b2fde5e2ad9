"""The text tests the searching rules' gates ask of every file (pipeline.searching_rules_of),
as `recording` predicates, so a warm run tests again only the files an edit changed: whether
a file may write a name (`may_name`), import a package (`may_import`) or hold a word
(`may_hold`). Registered when the pipeline is imported.
"""

from __future__ import annotations

import re
from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES
from amp_clipfix.sources.prefilter import holds, nfkc_holds, nfkc_stable, nfkc_text

# An import statement of a package or one of its modules (`import a, pkg.m as x`, `from pkg.m
# import y`), at a line's start or after `;` or `:` (`try: import pkg`), with backslash
# continuations joined first (import_text). `%s`: the package's name.
IMPORT_STATEMENT = (
    r"(?:^|[;:\r])[ \t\f]*(?:from[ \t\f]+|import[ \t\f]+(?:[\w.]+(?:[ \t\f]+as[ \t\f]+\w+)?"
    r"[ \t\f]*,[ \t\f]*)*)%s(?![\w])"
)


def may_import(data: bytes, package: str) -> bool:
    """Whether a file's text (Python's, a notebook's code) may import `package` (or one of its
    modules) by an import statement: the only way a name of the package's reaches the project's
    values (the evaluator follows imports, never `importlib` or `__import__`). Looked for as
    Python reads it: backslash continuations joined, a text that is not all ASCII after NFKC
    normalisation (`from ｌightning import Fabric`). Wider than Python where that is simpler (a
    `:` or `;` inside a string may start a match); never narrower."""
    word = package.encode("ascii")
    # The pattern, searched in the whole text, is slow: it needs the package's name, which
    # joining continuations or dropping a byte order mark (import_text) never makes.
    if not holds(data, word) and not nfkc_holds(data, (word,)):
        return False
    statement = re.compile(IMPORT_STATEMENT % re.escape(package), re.MULTILINE)
    return any(statement.search(line) for line in lines_naming(import_text(data), package))


def lines_naming(text: str, name: str) -> list[str]:
    """The lines of `text` (split at line feeds alone, after which a MULTILINE `^` matches)
    that hold `name`, each once: an import statement's match lies on one line (no part of
    the pattern reads a line feed) and ends with the name, so it is on one of these, where
    the pattern is tried at each position of those lines only, not of the whole text (it
    has no literal start for `re` to skip to)."""
    lines: list[str] = []
    found = text.find(name)
    while found >= 0:
        end = text.find("\n", found)
        end = len(text) if end < 0 else end
        lines.append(text[text.rfind("\n", 0, found) + 1 : end])
        found = text.find(name, end)
    return lines


def import_text(data: bytes) -> str:
    """The text import statements are looked for in: backslash continuations joined, a UTF-8
    byte order mark (which Python skips) gone."""
    if not data.isascii() and not nfkc_stable(data):
        text = nfkc_text(data).removeprefix("\ufeff")
    else:
        text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    return re.sub(r"\\(?:\r\n|\r|\n)", " ", text)


def may_name(path: Path, data: bytes, word: bytes) -> bool:
    """Whether a file may write the ASCII identifier `word`: as its bytes (a notebook: also
    through a JSON escape), or spelled with other characters that Python reads as it (NFKC:
    `Fabrⅰc` is `Fabric`), looked for only in a text that is not all ASCII."""
    from amp_clipfix.sources import adapter_for

    return adapter_for(path).may_mention(data, word) or nfkc_holds(data, (word,))


PREDICATES.update(may_name=may_name, may_import=lambda _, data, p: may_import(data, p))
PREDICATES.update(may_hold=lambda _, data, word: holds(data, word))
