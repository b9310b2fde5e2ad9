"""Whether a module's text may write a name inside a decoration, told from its bytes before it
is parsed (decorators.applications: a decorator's applications are looked for only in the
files that may write one of its names in a decoration; lightning-thunder's `jit` is written in
80 files, in a decoration in 8 of them).

A decoration starts a logical line, so its `@` is the first character of a physical line after
the indentation (spaces, tabs, form feeds), and it ends before the `def`, `async def` or
`class` line of its definition: those keywords never stand in an expression, so such a line
inside a decoration lies in a string. A region from each line starting with `@` to the next
definition line therefore holds every decoration, unless a string may carry a line break
within it (a triple quote, or a backslash ending a line, in the region): then the region runs
to the end of the text. Lines end as Python's tokenizer ends them (`\\n`, `\\r\\n`, `\\r`); a
byte order mark before the first line is skipped. The structure is read from the bytes as
stored and the names from each region as Python reads them (`python_text`: NFKC-folded), so a
name spelled in letters that fold to it is found. A file that is no `.py` module (a notebook's
JSON) or a name not all ASCII: may.
"""

from __future__ import annotations

import re
from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES
from amp_clipfix.analysis.text_tests import whole_word
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import python_text

# A line whose first character after the indentation is `@`: where a decoration may start.
DECORATION_LINE = lazy(rb"^[ \t\f]*@", re.MULTILINE)
# A definition's line: `def` or `class` (after `async`) followed by what may end the keyword.
DEFINITION_LINE = lazy(rb"^[ \t\f]*(?:async[ \t\f]+)?(?:def|class)[ \t\f\\]", re.MULTILINE)
# What lets a string run over a line break: a triple quote, a backslash ending a line.
MULTILINE_STRING = lazy(rb"\"\"\"|'''|\\\n")
BOM = b"\xef\xbb\xbf"


def may_decorate_with(path: Path | None, data: bytes, *names: bytes) -> bool:
    """Whether the text may write one of `names` (as a whole word) in a decoration."""
    if path is None or path.suffix != ".py" or not all(name.isascii() for name in names):
        return True
    text = data[len(BOM) :] if data.startswith(BOM) else data
    if b"\r" in text:
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    words = [whole_word(name) for name in names]
    covered = 0  # the end of the last region looked at
    for decoration in DECORATION_LINE.finditer(text):
        start = decoration.start()
        if start < covered:
            continue  # a further decoration of the same definition (or a `@` inside one)
        definition = DEFINITION_LINE.search(text, decoration.end())
        covered = definition.start() if definition is not None else len(text)
        if MULTILINE_STRING.search(text, start, covered) is not None:
            covered = len(text)
        region = python_text(text[start:covered])
        if any(word.search(region) is not None for word in words):
            return True
    return False


PREDICATES["may_decorate_with"] = may_decorate_with
