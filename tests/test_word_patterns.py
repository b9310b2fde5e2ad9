"""Text patterns searched through whole modules start with their word (`import`, `plugins`,
`def`) and look behind it after, as `text_tests.whole_word` does: the same matches as a leading
`\\b`, which keeps `re` from skipping to the word's occurrences (a search of every position
instead: about ten times slower, 0.03 s per pattern over the Lightning repository's 646
modules). A `global` statement is looked for from the keyword's occurrences
(`text_tests.writes_global`) instead of a pattern that starts with `^` or `[;:]` (0.45 s ->
0.02 s over the 14 corpora's texts that hold the word), and whether a project uses Lightning
(project_collect.uses_lightning) from the alternatives of USES_LIGHTNING one by one, each where
its word is in the text (0.07 s -> 0.01 s over mmengine's 322 modules). Each gives the answers
of what it replaced, on texts made of the characters that decide them."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from amp_clipfix.analysis import (
    clip_tail,
    contained_syntax,
    fields,
    module_objects,
    reach,
    resolve_entries,
    text_tests,
)
from amp_clipfix.analysis.project_collect import USES_LIGHTNING, uses_lightning

WORD = rb"[A-Za-z0-9_]"

# (the pattern as it was, the one in use, how it is used)
REPLACED = {
    "import clause": (
        re.compile(rb"\bimport\s+(\([^()]*|[^\n]*)"),
        text_tests.IMPORT_CLAUSE,
        "findall",
    ),
    "star import (contained)": (
        re.compile(rb"\bimport[ \t\\(\r\n]*\*"),
        contained_syntax.STAR_IMPORT,
        "search",
    ),
    "star import (clip tail)": (re.compile(rb"\bimport\s+\*"), clip_tail.STAR_IMPORT, "search"),
    "generic stores": (
        re.compile(rb"setattr\(\s*(?!self\b)|__dict__|\bvars\([^()]*\)\s*\.\s*update"),
        fields.GENERIC_STORES,
        "search",
    ),
    "plugins keyword": (
        re.compile(rb"\bplugins\s*=(?!=)"),
        resolve_entries.PLUGINS,
        "search",
    ),
}
GLOBAL = re.compile(rb"(?:^|[;:])[ \t]*global[ \t\\]", re.MULTILINE)

# The pieces that decide the answers: the words, what may stand before them (a word's end, a
# dot, a line's start, `;`, `:`), spaces, line breaks, continuations, `*`, `=`, parentheses.
PIECES = [
    b"import",
    b"plugins",
    b"global",
    b"re",
    b"_",
    b"9",
    b"x",
    b".",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\\",
    b"*",
    b"=",
    b"==",
    b"(",
    b")",
    b";",
    b":",
    b"#",
    b"from m ",
    b"a, b",
    b"def",
    b"step",
    b"from ",
    b"import ",
    b" as ",
    b",",
    b"lightning",
    b"pytorch_lightning",
    b"lightning_fabric",
    b"class_path",
    b"_target_",
    b"trainer",
    b"\xef\xbb\xbf",
    b"setattr(",
    b"self",
    b"__dict__",
    b"vars(x)",
    b"update",
    b"w",
    b"+=",
]

WRITTEN = [
    b"from m import *",
    b"from m import(*)",
    b"from m import (\n    a,\n    b,\n)\n",
    b"reimport *",
    b"_import *",
    b"x.import *",
    b"import\\\n*",
    b"Trainer(plugins=[p])",
    b"Trainer(my_plugins=[p])",
    b"Trainer(plugins == p)",
    b"plugins\n=\nx",
    b"def f():\n    global x\n",
    b"if a: global x",
    b"a = 1; global x",
    b"a = 1;\tglobal\\\n x",
    b"x = global_step",
    b"# global x",
    b"self.global x",
    b"global",
    b"global ",
    b"\r\nglobal x",
    b"import lightning as L",
    b"import os, lightning.pytorch as pl",
    b"from pytorch_lightning import Trainer",
    b"x = 1; from lightning_fabric import Fabric",
    b"\xef\xbb\xbfimport lightning",
    b"a = 1\n  import lightningx",
    b"# import lightning",
    b"trainer:\n  max_epochs: 1",
    b"my_trainer: 1",
    b"model:\n  class_path: m.Model",
    b"_target_: m.f",
    b"def step(self):",
    b"undef step():",
    b"def\tstep_two():",
    b"async def step(x):",
    b"setattr(self, 'w', 1)",
    b"setattr( obj, 'w', 1)",
    b"vars(x).update(a)",
    b"myvars(x).update(a)",
    b"self.w = 1",
    b"myself.w = 1",
    b"obj.w += 1",
    b"self .w == 1",
    b"x = w\n(y)",
    b"f(w)",
    b"w (1)",
]


def texts() -> list[bytes]:
    generated = random.Random(35)
    made = [b"".join(generated.choices(PIECES, k=generated.randint(1, 12))) for _ in range(6000)]
    pairs = [a + b for a, b in itertools.product(WRITTEN, repeat=2)]
    return WRITTEN + pairs + made


@pytest.mark.parametrize("name", sorted(REPLACED))
def test_the_same_matches_as_the_leading_word_boundary(name: str) -> None:
    before, now, use = REPLACED[name]
    for text in texts():
        if use == "search":
            was, found = before.search(text), now.search(text)
            assert (was and was.span()) == (found and found.span()), text
        else:
            assert before.findall(text) == now.findall(text), text


@pytest.mark.parametrize("name", sorted(set(REPLACED) - {"generic stores"}))
def test_the_pattern_starts_with_its_word(name: str) -> None:
    """What lets `re` skip to the word's occurrences: a literal first, no `\\b` before it."""
    pattern = REPLACED[name][1].pattern
    assert re.match(rb"[a-z]+\(\?<!" + re.escape(WORD), pattern), pattern


def test_an_outside_store_as_the_look_behind_first_finds_it() -> None:
    """fields.py's store of an attribute from outside its class, from the `.` on."""
    was = re.compile(rb"(?<!\bself)\.\s*w" + fields.AUGMENTED)
    now = re.compile(rb"\.(?<!\bself\.)\s*w" + fields.AUGMENTED)
    for text in texts():
        assert [m.span() for m in was.finditer(text)] == [m.span() for m in now.finditer(text)]
    assert fields.GENERIC_STORES.search(b"vars(x).update(a)")


def test_a_value_written_as_the_look_behind_first_finds_it() -> None:
    """module_objects.value_written: the word, not inside a longer one, not called on its line."""
    was = re.compile(rb"(?<![A-Za-z0-9_])w(?![A-Za-z0-9_])(?![ \t]*\()")
    now = module_objects.value_written(b"w")
    assert now.pattern.startswith(b"w")
    for text in texts():
        assert [m.span() for m in was.finditer(text)] == [m.span() for m in now.finditer(text)]


def test_a_global_statement_as_the_pattern_finds_it() -> None:
    for text in texts():
        assert text_tests.writes_global(text) == (GLOBAL.search(text) is not None), text
    assert text_tests.writes_global(b"def f():\n    global x\n")
    assert text_tests.writes_global(b"if a: global x")
    assert not text_tests.writes_global(b"x = global_step\n# a global x\n")


def test_a_def_as_the_leading_word_boundary_finds_it() -> None:
    for text in texts():
        for name in ("step", "f"):
            was = re.search(rb"\bdef\s+" + name.encode() + rb"\b", text) is not None
            assert reach.defines(name, text) == was, text


def test_lightning_used_as_the_whole_alternation_says() -> None:
    """`uses_lightning` (project_collect.py) asks each alternative of USES_LIGHTNING only where
    the text holds its word."""
    pattern = re.compile(USES_LIGHTNING, re.MULTILINE)
    for text in texts():
        assert uses_lightning(text) == (pattern.search(text) is not None), text
    assert uses_lightning(b"x = 1\nfrom lightning import Trainer\n")
    assert not uses_lightning(b"# see lightning, my_trainer: 1\n")
