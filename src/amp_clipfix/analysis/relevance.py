"""Which files of a project the resolution must look into, found in their text before parsing.

An optimizer is fused only through a value written somewhere as `fused`, so the files that can
hold a module class with a fused optimizer are the files with that word, the files that use a
name those files define (a factory, a mixin, a constant, a module class to subclass), the files
that use a name *those* define, and so on; plus the project modules any of them import (a module
class that receives an optimizer factory built elsewhere). Everything else (in a big repository
almost every file) is never parsed. The names are top-level definitions found with a regular
expression, which errs on the side of reading more; only names that tell nothing (`main`, `run`,
test functions) are left out, so a factory named `main` imported by a module class is missed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import WORD_BYTES, python_text

T = TypeVar("T")

# A line break, then a top-level definition or assignment: searched in b"\n" + the text, the
# same matches as `^...` with re.MULTILINE, found three times faster (a literal to scan for).
TOP_LEVEL_NAME = lazy(rb"\n(?:(?:async\s+def|def|class)\s+(\w+)|(\w+)\s*(?::[^=\n]*)?=(?!=))")
IMPORTED_MODULE = lazy(rb"^\s*(?:from\s+(\.*[\w.]*)\s+import|import\s+([\w.]+))", re.M)
WORD = lazy(rb"\w+")
# The words of a text as WORD finds them (ASCII letters, digits, `_`), twice as fast: every
# other byte becomes a space, and the text is split there.
NOT_WORD_TO_SPACE = bytes(byte if byte in WORD_BYTES else 32 for byte in range(256))
# Names too common to tell anything (a file defining `main` does not make every `main` a user);
# test functions (`test_*`) are called by the test runner, not by other code.
COMMON_NAMES = frozenset({b"main", b"run", b"model", b"config", b"args", b"logger", b"log", b"_"})


def text_words(data: bytes) -> set[bytes]:
    """The words of a text, as the word index holds them (WORD's matches), read as Python
    reads its names (`python_text`: `ｃfg` is `cfg`)."""
    return set(python_text(data).translate(NOT_WORD_TO_SPACE).split())


def index_of(texts: Iterable[tuple[T, bytes]]) -> dict[bytes, list[T]]:
    """Each word's keys (a file's path, its position), in the order of `texts`: the word
    index's pass (word_index.words_of, word_store.positions_of)."""
    return inverted((key, text_words(data)) for key, data in texts)


class WordFiles(Mapping[bytes, list[T]]):
    """index_of's answer, each word's keys found when it is first asked: a run asks a few dozen
    words of an index of thousands (the Lightning tree: 54 of 13,949), and turning each text's
    words into each word's files is a third of the pass. Each text's set of words is kept, and
    a word's keys are the texts whose set holds it, in order, until the lookups have tested
    INVERTED_AFTER sets per word a text holds: then the whole index is made (about what those
    tests cost), and the sets let go. The sets hold ~80 bytes a word of each text, the whole
    index ~10 (the Lightning tree's 83,641: a peak 5 MB higher), so an index of more than
    LAZY_MOST words in all is made whole at once, the sets of the texts past that bound each
    put into the index as it is made: all held at once, they raised the heap by their size for
    the rest of the run (DeepLearningExamples' notebooks' outputs: 33 MB)."""

    INVERTED_AFTER = 4  # a set tested: ~35 ns; a text's word put in the index: ~130 ns
    LAZY_MOST = 150_000

    def __init__(self, texts: Iterable[tuple[T, bytes]]) -> None:
        self.texts: list[tuple[T, set[bytes]]] | None = []
        self.size = 0
        self.tested = 0  # sets tested by the lookups so far
        self.asked: dict[bytes, list[T]] = {}
        self.whole: dict[bytes, list[T]] | None = None
        rest = iter(texts)
        for key, data in rest:
            words = text_words(data)
            self.texts.append((key, words))
            self.size += len(words)
            if self.size > self.LAZY_MOST:  # the rest's sets go into the index one by one
                more = ((key, text_words(data)) for key, data in rest)
                self.whole = inverted(itertools.chain(self.texts, more))
                self.texts = None
                break

    def get(self, word: bytes, default: object = None) -> list[T] | None:  # type: ignore[override]
        found = self.lookup(word)
        return found if found else default  # type: ignore[return-value]

    def lookup(self, word: bytes) -> list[T]:
        """The word's keys, [] for a word no text holds."""
        if self.whole is not None:
            return self.whole.get(word, [])
        found = self.asked.get(word)
        if found is None:
            assert self.texts is not None
            self.tested += len(self.texts)
            if self.tested > self.INVERTED_AFTER * self.size:
                return self.inverted().get(word, [])
            found = self.asked[word] = [key for key, words in self.texts if word in words]
        return found

    def inverted(self) -> dict[bytes, list[T]]:
        """The whole index, made now if it was not yet."""
        if self.whole is None:
            assert self.texts is not None
            self.whole = inverted(self.texts)
            self.texts, self.asked = None, {}
        return self.whole

    def __getitem__(self, word: bytes) -> list[T]:
        found = self.lookup(word)
        if not found:
            raise KeyError(word)
        return found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, bytes) and bool(self.lookup(word))

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.inverted())

    def __len__(self) -> int:
        return len(self.inverted())


def inverted(texts: Iterable[tuple[T, Iterable[bytes]]]) -> dict[bytes, list[T]]:
    """Each word's keys, in the order of `texts` (each key with its words)."""
    index: dict[bytes, list[T]] = {}
    for key, words in texts:
        for word in words:
            files = index.get(word)
            if files is None:
                index[word] = [key]
            else:
                files.append(key)
    return index


def top_level_names(data: bytes) -> set[bytes]:
    """Names a module defines at its top level: functions, classes, assigned constants."""
    names = {match.group(1) or match.group(2) for match in TOP_LEVEL_NAME.finditer(b"\n" + data)}
    return {
        name
        for name in names
        if name and len(name) > 2 and name not in COMMON_NAMES and not name.startswith(b"test")
    }


def fused_relevant_files(
    contents: Mapping[Path, bytes], modules: Mapping[str, list[Path]], word: bytes = b"fused"
) -> set[Path]:
    """The files whose module classes may build a fused optimizer (see the module docstring).

    `modules` maps dotted module names of the project to their files, to follow imports."""
    core = relevant_core(contents, word)
    return set(core.rounds) | imported_files(set(core.rounds), contents, modules)


class Core:
    """fused_relevant_files before the imports: the files with the word (round 0), those that
    write a name they define (round 1), and so on. Kept with each file's round and the names it
    defines, so a later run can tell whether an edit changes it (queries.py)."""

    def __init__(self) -> None:
        self.rounds: dict[Path, int] = {}
        self.defined: dict[Path, frozenset[bytes]] = {}
        self.names: set[bytes] = set()  # every name a file of the core defines


def relevant_core(
    contents: Mapping[Path, bytes],
    word: bytes,
    files_by_word: Callable[[], Mapping[bytes, list[Path]]] | None = None,
) -> Core:
    """`files_by_word`: the files of each whole word of `contents` (word_index.words_of), made
    when a round asks: a round then looks up its new names instead of searching every text for
    them (fairseq: 0.28 s of searches, the index 0.07 s). The same files: a name is a run of
    word bytes (TOP_LEVEL_NAME), and a whole-word match of one is one of the runs the index
    splits each text into."""
    core = Core()
    frontier = {path for path, data in contents.items() if word in data}
    level = 0
    while frontier:
        for path in frontier:
            core.rounds[path] = level
            core.defined[path] = frozenset(top_level_names(contents[path]))
        new_names = set().union(*(core.defined[path] for path in frontier)) - core.names
        core.names |= new_names
        if files_by_word is not None and new_names:
            index = files_by_word()
            frontier = {
                path
                for name in new_names
                for path in index.get(name, ())
                if path not in core.rounds
            }
        else:
            pattern = any_word(new_names)
            frontier = {
                path
                for path, data in contents.items()
                if path not in core.rounds and pattern is not None and pattern.search(data)
            }
        level += 1
    return core


def imported_files(
    paths: set[Path], contents: Mapping[Path, bytes], modules: Mapping[str, list[Path]]
) -> set[Path]:
    """Project files the given files import (by absolute or relative dotted name)."""
    return set().union(*imports_by_file(paths, contents, modules).values())


def imports_by_file(
    paths: Iterable[Path],
    contents: Mapping[Path, bytes],
    modules: Mapping[str, list[Path]],
    named: Mapping[Path, frozenset[str]] | None = None,
) -> dict[Path, frozenset[Path]]:
    """imported_files of each of `paths` (`named`: their `imported_modules`, when known)."""
    by_last: dict[str, list[Path]] = {}
    for name, files in modules.items():
        by_last.setdefault(name.rsplit(".", 1)[-1], []).extend(files)
    imports: dict[Path, frozenset[Path]] = {}
    for path in paths:
        found: set[Path] = set()
        for dotted in imported_modules(contents[path]) if named is None else named[path]:
            exact = modules.get(dotted)
            found.update(exact if exact else by_last.get(dotted.rsplit(".", 1)[-1], ()))
        imports[path] = frozenset(found)
    return imports


def imported_modules(data: bytes) -> frozenset[str]:
    """The dotted module names a file's imports name (all imported_files reads of it)."""
    found = set()
    for match in IMPORTED_MODULE.finditer(data):
        dotted = (match.group(1) or match.group(2)).decode("ascii", "replace").strip(".")
        if dotted:
            found.add(dotted)
    return frozenset(found)


CLASS_WITH_BASES = lazy(rb"^([ \t]*)class\s+(\w+)\s*\(([^)]*)\)", re.MULTILINE)
CLASS_KEYWORD = lazy(rb"class\s+\w+\s*\(")  # where CLASS_WITH_BASES may match


ClassLines = dict[Path, list[tuple[re.Match[bytes], bytes, set[bytes]]]]


def class_lines(contents: Mapping[Path, bytes]) -> ClassLines:
    """Per file, its `class Name(bases):` lines: the name and the words of the bases."""
    return {
        path: [(match, match[2], set(WORD.findall(match[3]))) for match in class_matches(data)]
        for path, data in contents.items()
        if b"class" in data
    }


def class_matches(data: bytes) -> list[re.Match[bytes]]:
    """CLASS_WITH_BASES.finditer(data), found seven times faster: a `^` pattern is tried at
    every byte, so the keyword is found first and the pattern matched at the start of its
    line."""
    found: list[re.Match[bytes]] = []
    end = 0
    for candidate in CLASS_KEYWORD.finditer(data):
        line = data.rfind(b"\n", 0, candidate.start()) + 1
        if line < end or data[line : candidate.start()].strip(b" \t"):
            continue
        match = CLASS_WITH_BASES.match(data, line)
        if match is not None:
            found.append(match)
            end = match.end()
    return found


def subclass_files(
    contents: Mapping[Path, bytes],
    base: bytes,
    body: re.Pattern[bytes] | None = None,
    classes: ClassLines | None = None,
) -> set[Path]:
    """Files defining a class that derives from `base` (by name, also through project classes
    that derive from it), so that only those are parsed to look for Trainer subclasses; with
    `body`, only classes whose text (class_text) it matches count. `classes`: class_lines of
    `contents`, when already at hand."""
    wanted = {base}
    found: set[Path] = set()
    if classes is None:
        classes = class_lines(contents)
    grew = True
    while grew:
        grew = False
        for path, defined in classes.items():
            for match, name, bases in defined:
                if bases & wanted and name not in wanted:
                    wanted.add(name)
                    grew = True
                if bases & wanted and path not in found and configures(body, contents[path], match):
                    found.add(path)
    return found


def configures(body: re.Pattern[bytes] | None, data: bytes, match: re.Match[bytes]) -> bool:
    return body is None or body.search(class_text(data, match)) is not None


def class_text(data: bytes, match: re.Match[bytes]) -> bytes:
    """A class's text: up to the next line indented no deeper than its `class` line. Where
    that cut may fall inside a string or brackets (unbalanced quotes or parentheses before it),
    the rest of the file, so that a text test on it errs on the side of reading more."""
    depth = len(match[1].expandtabs())
    after = match.end()
    for line in NEXT_LINE.finditer(data, after):
        indentation = len(line[1].expandtabs())
        if indentation <= depth:
            text = data[match.start() : line.start()]
            balanced = text.count(b"(") == text.count(b")") and text.count(b"[") == text.count(b"]")
            quotes_even = text.count(b'"""') % 2 == 0 and text.count(b"'''") % 2 == 0
            return text if balanced and quotes_even else data[match.start() :]
    return data[match.start() :]


# A line with code on it (not blank, not a comment, not closing a bracket): its indentation.
NEXT_LINE = lazy(rb"^([ \t]*)(?=[^\s#)\]}])", re.MULTILINE)


def may_define_subclass(data: bytes) -> bool:
    """Whether a module's text may hold a class statement that names a base (what a class
    needs to derive from anything): no only when each `class` keyword that starts a line, after
    its indentation, opens `class Name:` (a class statement starts a line: it is a compound
    statement). Errs on the side of yes: `class A():`, a name outside ASCII, a header split
    by a backslash, a line of a string that starts with the word, a text with NUL bytes."""
    if b"\0" in data:
        return True  # not an ASCII-compatible text: its keywords are not found as bytes
    for found in CLASS_WORD.finditer(data):
        start, end = found.span()
        if end < len(data) and data[end] in IDENTIFIER_BYTES:
            continue  # `classes = ...`: another name
        line = max(data.rfind(b"\n", 0, start), data.rfind(b"\r", 0, start)) + 1
        indentation = data[line:start]
        if line == 0:
            indentation = indentation.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 signature
        if indentation.strip(b" \t\f"):
            continue  # not where a statement starts
        if CLASS_WITHOUT_BASES.match(data, start) is None:
            return True
    return False


CLASS_WORD = lazy(rb"class")
CLASS_WITHOUT_BASES = lazy(rb"class[ \t\f]+[A-Za-z_][A-Za-z0-9_]*[ \t\f]*:")
# Bytes that continue a name (`\x80`-`\xff`: a letter outside ASCII in UTF-8).
IDENTIFIER_BYTES = WORD_BYTES | frozenset(range(128, 256))


def files_naming(
    contents: Mapping[Path, bytes], names: set[str], among: Collection[Path] | None = None
) -> set[Path]:
    """Files that write one of `names`, or a name defined at the top of a file that does (a
    factory returning the class): where a module class can be created and fitted. `among`:
    only these files are wanted (those that fit at all); the names still come from every file."""
    pattern = any_word({name.encode("utf-8") for name in names})
    if pattern is None:
        return set()
    direct = {path for path, data in contents.items() if pattern.search(data)}
    nearby = set().union(*(top_level_names(contents[path]) for path in direct))
    pattern = any_word({name.encode("utf-8") for name in names} | nearby)
    assert pattern is not None
    wanted = contents if among is None else among
    return {path for path in wanted if pattern.search(contents[path])}


def any_word(words: set[bytes]) -> WordSearch | None:
    """A search for any of `words` as a whole word, file by file."""
    return WordSearch(words) if words else None


class WordSearch:
    """Whole words, searched in C. Up to FEW_WORDS, a substring test per word rules most files
    out first (~0.3 ns a byte a word, where a `\b(?:a|b|...)\b` pattern costs ~15 ns a byte);
    up to MAX_ALTERNATIVES, that pattern, after the same alternatives without `\b` (twice as
    fast); for more (a generated module defines thousands of names) a set of each file's
    words, since a pattern of thousands of alternatives takes seconds to compile."""

    MAX_ALTERNATIVES = 300
    FEW_WORDS = 40

    def __init__(self, words: set[bytes]) -> None:
        self.words = words
        self.pattern: re.Pattern[bytes] | None = None
        self.substrings: re.Pattern[bytes] | None = None
        if len(words) <= self.MAX_ALTERNATIVES:
            ordered = sorted(words, key=len, reverse=True)
            alternatives = b"|".join(re.escape(word) for word in ordered)
            self.pattern = re.compile(rb"\b(?:" + alternatives + rb")\b")
            self.substrings = re.compile(alternatives)

    def search(self, data: bytes) -> bool:
        if len(self.words) <= self.FEW_WORDS:
            if not any(word in data for word in self.words):
                return False
        elif self.substrings is not None and self.substrings.search(data) is None:
            return False
        if self.pattern is not None:
            return self.pattern.search(data) is not None
        return not self.words.isdisjoint(data.translate(NOT_WORD_TO_SPACE).split())
