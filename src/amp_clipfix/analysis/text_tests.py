"""Text tests of one file's bytes that the caller search makes before it parses a file, as
`recording` predicates: a query notes each test and its result (`recording.tested`), not a read
of the whole file, so an edit that leaves every result as it was keeps the answers that made
them (`query_checks.still` runs the changed files' tests again).

- `written`: a name written as a whole word (or as a call), other than right after `def` or
  `class` (callers.CallerIndex.written);
- `imports`: a name written in one of the file's `import` clauses
  (callers.CallerIndex.imports_name);
- `referenced`: a name written as an attribute or at the end of a string
  (contained.Containment.may_read).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import whole_word_starts, word_start

IDENTIFIER = lazy(rb"[A-Za-z_][A-Za-z0-9_]*")


# What follows `import`: a parenthesized list up to its first parenthesis, or the rest of the line
# (`from m import name`, also as one of several names or inside parentheses).
IMPORT_CLAUSE = lazy(word_start(b"import") + rb"\s+(\([^()]*|[^\n]*)")
# `global` followed by what may end the keyword, searched before the start of its statement is
# looked for (writes_global).
GLOBAL_WORD = lazy(rb"global[ \t\\]")
# What may stand between a callee's name and the `(` of its call: spaces and line breaks (in
# brackets), comments, backslash continuations.
CALL_GAP = rb"(?:[ \t\f\r\n]|\\(?:\r\n|\r|\n)|#[^\r\n]*)*\("
# A `def` or `class` keyword right before a name (spaces and tabs between): its definition.
# What may stand between a name and the `.` or quote around it (text_reference).
GAPS = frozenset(b" \t\r\n\f\v\\")
# From a line's start: `from` or `import`, then dotted names only (text_reference's `imports`).
IMPORT_PREFIX = lazy(rb"[ \t]*(?:from|import)[ \t][A-Za-z0-9_. \t,]*\Z")
DEFINED = lazy(rb"(?<![A-Za-z0-9_])(?:def|class)[ \t\f]+\Z")


@functools.lru_cache(maxsize=256)
def call_of(name: bytes) -> re.Pattern[bytes]:
    """`name` as a whole word followed by the `(` of a call (whole_word's look-behind)."""
    escaped = re.escape(name)
    return re.compile(escaped + rb"(?<![A-Za-z0-9_]" + escaped + rb")" + CALL_GAP)


@functools.lru_cache(maxsize=256)
def whole_word(name: bytes) -> re.Pattern[bytes]:
    """`name` written as a whole word (not inside a longer identifier). The pattern starts with
    the name, so `re` skips to its occurrences as a plain text search does, and looks behind
    it after: the same matches as a leading `(?<![A-Za-z0-9_])`, twenty times faster."""
    return re.compile(whole_word_text(name))


def whole_word_text(name: bytes) -> bytes:
    """whole_word's pattern, not compiled (a query notes a scan by its pattern's text)."""
    escaped = re.escape(name)
    return escaped + rb"(?<![A-Za-z0-9_]" + escaped + rb")(?![A-Za-z0-9_])"


PATTERNS: dict[str, Callable[[bytes], re.Pattern[bytes]]] = {
    "whole_word": whole_word,
    "call_of": call_of,
}


def written(path: Path | None, data: bytes, pattern: str, name: str) -> bool:
    """Whether `PATTERNS[pattern](name)` matches `data` other than right after `def`/`class`.
    A whole word is found by a plain text search (whole_word_starts: the same starts) rather
    than by a pattern compiled for each name asked."""
    word = name.encode("ascii")
    if pattern == "whole_word" and IDENTIFIER.fullmatch(word):
        starts: Iterable[int] = whole_word_starts(data, word)
    else:
        starts = (match.start() for match in PATTERNS[pattern](word).finditer(data))
    return any(not DEFINED.search(data, max(0, start - 16), start) for start in starts)


def import_names(data: bytes) -> frozenset[bytes]:
    """The names the text's `import` clauses write."""
    return frozenset(
        token for clause in IMPORT_CLAUSE.findall(data) for token in IDENTIFIER.findall(clause)
    )


def imports(path: Path | None, data: bytes, name: bytes) -> bool:
    return name in import_names(data)


def text_reference(word: bytes, data: bytes, imports: bool = True) -> bool:
    """The text writes `word` as an attribute (`.Name`) or at the end of a string (`"Name"`,
    `"pkg.Name"`, `"pkg:Name"`), as contained.py's module_keeps looks for them in the tree
    (spaces, line breaks, backslashes and comments between: `(x.  # why` then `Name)`).
    `imports` False: a dotted name of an import statement's own line (`from pkg.Name import
    f`, `import pkg.Name`) is no attribute."""
    for match in whole_word(word).finditer(data):
        before = match.start() - 1
        while before >= 0 and data[before] in GAPS:
            if data[before] in b"\r\n":  # a line ends here: a comment on it is a gap too
                start = max(data.rfind(b"\n", 0, before), data.rfind(b"\r", 0, before)) + 1
                comment = data.find(b"#", start, before)  # the first: the widest gap
                before = comment if comment != -1 else before
            before -= 1
        after = match.end()
        while after < len(data) and data[after] in GAPS:
            after += 1
        sign = data[before : before + 1] if before >= 0 else b""
        if sign == b"." and not imports and import_line(data, before):
            continue
        if sign == b"." or (sign in (b":", b"'", b'"') and data[after : after + 1] in (b"'", b'"')):
            return True
    return False


def import_line(data: bytes, offset: int) -> bool:
    """The line holding `offset` starts an import statement and holds only its dotted names up
    to there (no `;`, no bracket, no other statement)."""
    start = max(data.rfind(b"\n", 0, offset), data.rfind(b"\r", 0, offset)) + 1
    return IMPORT_PREFIX.match(data, start, offset) is not None


def attribute_written(path: Path | None, data: bytes, name: bytes) -> bool:
    return text_reference(name, data, imports=False)


def referenced(path: Path | None, data: bytes, name: bytes) -> bool:
    return text_reference(name, data)


@functools.lru_cache(maxsize=1024)
def free_word(name: str) -> re.Pattern[bytes]:
    """`name` as a whole word other than in `.name(`: not after `.` or not before `(`
    (`\\w` is ASCII in a bytes pattern, as `isalnum` of a byte), compiled once per name. The
    word comes first and the look-behinds after it: `re` then looks for the literal."""
    word = re.escape(name.encode("ascii"))
    return re.compile(word + rb"(?:(?<![\w.]" + word + rb")(?!\w)|(?<!\w" + word + rb")(?![\w(]))")


def written_free(name: str, data: bytes) -> bool:
    """The text may write `name` other than as a method call `.name(`: the word stands in it
    once at least other than so (one search for the literal and what stands around it)."""
    return free_word(name).search(data) is not None


PREDICATES["written"] = written
PREDICATES["imports"] = imports
PREDICATES["referenced"] = referenced
PREDICATES["attribute_written"] = attribute_written  # module_holders.ModuleHolders
# reach.value_files' over-budget answer (registered here: `query_checks.still` imports this module)
PREDICATES["written_free"] = lambda path, data, name: written_free(name, data)


def writes_global(data: bytes) -> bool:
    """A `global` statement may be written: the keyword where a statement starts (a line, after
    `;` or `:`, spaces or tabs between). The same answer as searching
    `(?:^|[;:])[ \t]*global[ \t\\]` (multiline), from the keyword's occurrences only."""
    for match in GLOBAL_WORD.finditer(data):
        before = match.start() - 1
        while before >= 0 and data[before] in b" \t":
            before -= 1
        if before < 0 or data[before] in b"\n;:":
            return True
    return False
