"""Text tests written with their word first (`sources/prefilter.word_start`: the word, then
its look-behind) match at exactly the places the `\\b` forms they replace matched: on texts
built to break them (the word at the start, after `_`, a digit, a dot, a non-ASCII byte, inside
a longer name) and on many random texts of the same pieces. The USES_LIGHTNING scan skips a
text holding none of its words only where the pattern finds nothing in it."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from amp_clipfix.analysis import (
    clip_tail,
    contained_syntax,
    module_objects,
    project_collect,
    reach,
    text_tests,
)
from amp_clipfix.analysis.resolve_entries import PLUGINS
from amp_clipfix.sources import prefilter

# (name, the pattern as the tool compiles it, the `\b` form it replaces)
PAIRS: list[tuple[str, re.Pattern[bytes], re.Pattern[bytes]]] = [
    ("clip_tail.STAR_IMPORT", clip_tail.STAR_IMPORT, re.compile(rb"\bimport\s+\*")),
    (
        "contained_syntax.STAR_IMPORT",
        contained_syntax.STAR_IMPORT,
        re.compile(rb"\bimport[ \t\\(\r\n]*\*"),
    ),
    (
        "text_tests.IMPORT_CLAUSE",
        text_tests.IMPORT_CLAUSE,
        re.compile(rb"\bimport\s+(\([^()]*|[^\n]*)"),
    ),
    ("resolve_entries.PLUGINS", PLUGINS, re.compile(rb"\bplugins\s*=(?!=)")),
    (
        "prefilter.FUSED_ARGUMENT",
        prefilter.FUSED_ARGUMENT,
        re.compile(rb"\bfused\s*=(?!=)|[\'\"]fused[\'\"]"),
    ),
    ("prefilter.CONFIG_FUSED", prefilter.CONFIG_FUSED, re.compile(rb"\bfused\s*:")),
    (
        "module_objects.value_written(step)",
        module_objects.value_written(b"step"),
        re.compile(rb"(?<![A-Za-z0-9_])step(?![A-Za-z0-9_])(?![ \t]*\()"),
    ),
]

PIECES = [
    b"import",
    b"def",
    b"plugins",
    b"fused",
    b"step",
    b"prepare",
    b"lightning",
    b"_",
    b"x",
    b"9",
    b".",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"*",
    b"(",
    b")",
    b"=",
    b"==",
    b":",
    b"'",
    b'"',
    b"\\",
    b"#",
    b";",
    "é".encode(),
    b"\xef\xbb\xbf",
]

EDGES = [
    b"import *",
    b"ximport *",
    b"_import *",
    b"9import *",
    b".import *",
    "éimport *".encode(),
    b"from m import (\n  *",
    b"reimport\t*",
    b"def prepare(",
    b"undef prepare(",
    b"def prepared(",
    b"plugins = []",
    b"my_plugins=[]",
    b"plugins == x",
    b"fused=True",
    b"unfused = 1",
    b"'fused'",
    b"fused: true",
    b"step = opt.step",
    b"opt.step (x)",
    b"steps",
    b"_step",
]


def spans(pattern: re.Pattern[bytes], text: bytes) -> list[tuple[tuple[int, int], tuple]]:
    return [(match.span(), match.groups()) for match in pattern.finditer(text)]


def texts(count: int, seed: int) -> list[bytes]:
    chosen = random.Random(seed)
    return [
        b"".join(chosen.choice(PIECES) for _ in range(chosen.randrange(1, 24)))
        for _ in range(count)
    ]


@pytest.mark.parametrize("name", [name for name, _, _ in PAIRS])
def test_the_same_matches_as_the_word_boundary(name: str) -> None:
    _, pattern, original = next(pair for pair in PAIRS if pair[0] == name)
    assert pattern.pattern != original.pattern
    for text in [*EDGES, *texts(3000, 35)]:
        assert spans(pattern, text) == spans(original, text), text


def test_defines_is_the_word_boundary_search() -> None:
    def original(name: str, data: bytes) -> bool:
        return re.search(rb"\bdef\s+" + re.escape(name.encode()) + rb"\b", data) is not None

    for text in [*EDGES, *texts(3000, 36)]:
        for name in ("prepare", "step"):
            assert reach.defines(name, text) == original(name, text), text


def lightning_test() -> Callable[[bytes], bool]:
    return project_collect.uses_lightning


def test_the_lightning_words_leave_out_only_texts_the_pattern_does_not_match() -> None:
    uses = re.compile(project_collect.USES_LIGHTNING, re.MULTILINE)
    test = lightning_test()
    extra = [
        b"import lightning",
        b"from pytorch_lightning import Trainer",
        b"import os, lightning_fabric as lf",
        b"\xef\xbb\xbfimport lightning",
        b"x = 1; from lightning import LightningModule",
        b"cfg = {'class_path': 'm.M'}",
        b"_target_: m.M",
        b"trainer :",
        b"trainer:\n  max_epochs: 1",
        b"import torch",
    ]
    pieces = [*PIECES, b"from ", b"import ", b"class_path", b"_target_", b"trainer", b"as "]
    chosen = random.Random(37)
    randoms = [
        b"".join(chosen.choice(pieces) for _ in range(chosen.randrange(1, 16))) for _ in range(3000)
    ]
    matched = 0
    for text in [*extra, *randoms]:
        found = uses.search(text) is not None
        matched += found
        assert test(text) == found, text
    assert matched > 100  # the random texts do reach the pattern
