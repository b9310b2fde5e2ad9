"""Text tests of the call a rule's every finding is written as, made before a file is parsed.

A rule's search parses each file holding one of its words (`ProjectFacts.with_words`), then
looks in the tree for the one call shape its findings are made of. Where the text cannot
write that shape, the tree holds no such call, so the file is not parsed for it (a `where`
test of `with_words`). On the Lightning repository 17 of the rules' 95 parses were such files
(`loss.backward(loss)`-only modules for ACF008, `_run_test_clip_gradients` for ACF007), and
2 more were ACF007's `"clip_gradients"` in a string or a docstring, not after a dot.

Each pattern matches wherever Python may read the shape (an over-approximation: strings and
comments count): the name as a whole word (after a dot, for an attribute), then spaces, line
breaks, backslash continuations or comments (`(loss.backward\n)()` too). A text that is not all
ASCII is tested as Python reads its names (NFKC: `ｂackward` is `backward`). An edit to a file
holding the search's words runs the search's query again where the test now passes (its
`condition`, noted with the words: `query_checks.candidates_hold`), so a file the test leaves
out is looked at again once it may write the shape.
"""

from __future__ import annotations

import re
from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES, Condition
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import GAP, python_text, word_start

# A keyword argument's name (an identifier, maybe not ASCII once normalised) and its `=`.
_KEYWORD = rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+" + GAP + rb"=(?!=)"


def attribute(name: bytes) -> re.Pattern[bytes]:
    """`<x>.name` (an attribute: `x . name`, the dot maybe a gap before it), not the name
    alone, inside a longer name, or in a string that is not also written after a dot."""
    return lazy(rb"\." + GAP + re.escape(name) + rb"(?![A-Za-z0-9_])")


def keyword_argument(name: bytes) -> re.Pattern[bytes]:
    """`name=` as a call's keyword argument may be written (`name = x`, not `name == x`)."""
    return lazy(word_start(name) + rb"(?![A-Za-z0-9_])" + GAP + rb"=(?!=)")


def called_without_positional(name: bytes) -> re.Pattern[bytes]:
    """A call of `name` (`x.name(...)`, `(x.name)(...)`) passing no positional argument: the
    `(` followed by `)`, a `**` spread or a keyword argument."""
    return lazy(
        word_start(name)
        + rb"(?![A-Za-z0-9_])(?:"
        + GAP
        + rb"\))*+"
        + GAP
        + rb"\("
        + GAP
        + rb"(?:\)|\*\*|"
        + _KEYWORD
        + rb")"
    )


class MayWrite:
    """A `with_words` test (recording.TextTest): the text, as Python reads it, matches."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern

    def __call__(self, path: Path | None, data: bytes) -> bool:
        return self.writes(python_text(data))

    @property
    def condition(self) -> Condition:
        """The test as a query notes it (recording.Candidates.words): a function of the text
        alone, so a later run asks it again of a changed file (`may_write`)."""
        return ("fn", MAY_WRITE, type(self).__name__, self.pattern.pattern, self.pattern.flags)

    def writes(self, text: bytes) -> bool:
        return self.pattern.search(text) is not None


class InClass(MayWrite):
    """The call written after a `class` keyword: where a method can hold it (ACF008's modules:
    a class's methods lie inside its `class` statement)."""

    def writes(self, text: bytes) -> bool:
        first = CLASS_KEYWORD.search(text)
        return first is not None and self.pattern.search(text, first.end()) is not None


class InWrapper(MayWrite):
    """The call written in a text where a function returns one it defines, by name: where a
    decorator's wrapper can hold it (decorators.decorator_of: `def wrapper` inside the
    decorator, `return wrapper`, maybe in brackets)."""

    def writes(self, text: bytes) -> bool:
        if self.pattern.search(text) is None:
            return False
        defined = {match.group(1) for match in DEF_NAME.finditer(text)}
        return any(match.group(1) in defined for match in RETURN_NAME.finditer(text))


_IDENTIFIER = rb"([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*+)"
CLASS_KEYWORD = lazy(word_start(b"class") + rb"(?![A-Za-z0-9_])")
DEF_NAME = lazy(word_start(b"def") + rb"(?![A-Za-z0-9_])" + GAP + _IDENTIFIER)
RETURN_NAME = lazy(
    word_start(b"return") + rb"(?![A-Za-z0-9_])" + GAP + rb"(?:\(" + GAP + rb")*+" + _IDENTIFIER
)

# ACF008: `<loss>.backward()` (keywords only: `fabric.backward(loss)` passes one), in a
# module's method or in a decorator's wrapper (its two searches).
PLAIN_BACKWARD = MayWrite(called_without_positional(b"backward"))
PLAIN_BACKWARD_IN_CLASS = InClass(PLAIN_BACKWARD.pattern)
PLAIN_BACKWARD_WRAPPER = InWrapper(PLAIN_BACKWARD.pattern)
# ACF007: `<fabric>.clip_gradients(...)`, or a partial of that attribute: either writes the
# attribute (partials.method_calls reads nothing else), so a name or a string alone is not one.
CLIP_GRADIENTS = MayWrite(attribute(b"clip_gradients"))
# ACF009: `Trainer(gradient_clip_val=...)`.
CLIP_VAL_KEYWORD = MayWrite(keyword_argument(b"gradient_clip_val"))

MAY_WRITE = "may_write"  # the tests' predicate (recording.PREDICATES)


def may_write(path: Path | None, data: bytes, kind: str, pattern: bytes, flags: int) -> bool:
    """What `MayWrite.condition` notes: that test of the text (`re` keeps the compiled)."""
    tests = {"MayWrite": MayWrite, "InClass": InClass, "InWrapper": InWrapper}
    return tests[kind](re.compile(pattern, flags))(path, data)


PREDICATES[MAY_WRITE] = may_write
