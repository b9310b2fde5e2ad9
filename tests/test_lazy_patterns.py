"""Module-level regular expressions are compiled at their first use (patterns.py), not when
their module is imported: a run imports many modules for one of their functions, and Python
compiles each pattern with Python code. A lazy pattern finds what the compiled one finds, and
the modules that write them compile none at import."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from amp_clipfix.patterns import LazyPattern, lazy

SRC = Path(__file__).resolve().parent.parent / "src"

# The modules whose module-level patterns are lazy (a module compiling one at import fails).
LAZY_MODULES = (
    "amp_clipfix.sources.text",
    "amp_clipfix.sources.prefilter",
    "amp_clipfix.sources.notebook",
    "amp_clipfix.sources.notebook_json",
    "amp_clipfix.sources.yaml",
    "amp_clipfix.analysis.relevance",
    "amp_clipfix.analysis.config_scan",
    "amp_clipfix.analysis.config_sites",
    "amp_clipfix.analysis.parse",
    "amp_clipfix.analysis.suppression",
    "amp_clipfix.analysis.text_tests",
    "amp_clipfix.analysis.fused_origins",
    "amp_clipfix.analysis.fields",
    "amp_clipfix.analysis.contained_syntax",
    "amp_clipfix.analysis.cli_config",
    "amp_clipfix.project.evidence",
    "amp_clipfix.project.pin_readers",
    "amp_clipfix.project.pins",
    "amp_clipfix.project.install_readers",
    "amp_clipfix.output.diff",
    "amp_clipfix.output.patches",
    "amp_clipfix.analysis.bound_names",
    "amp_clipfix.analysis.facts",
    "amp_clipfix.analysis.calls",
    "amp_clipfix.analysis.shape_texts",
    "amp_clipfix.analysis.word_index",
    "amp_clipfix.fixes.elide",
    "amp_clipfix.reporting",
    "amp_clipfix.noqa_writer",
)

# Imports the modules with `re.compile` counted by the module that called it.
COUNT_COMPILES = """
import collections, re, sys
compiled = collections.Counter()
original = re._compile
def counting(pattern, flags):
    if not isinstance(pattern, re.Pattern):
        compiled[sys._getframe(1).f_globals.get("__name__")] += 1
        compiled[sys._getframe(2).f_globals.get("__name__")] += 1
    return original(pattern, flags)
re._compile = counting
for name in sys.argv[1:]:
    __import__(name)
print(" ".join(sorted(name for name in compiled if name in sys.argv[1:])))
"""


def test_the_modules_compile_no_pattern_when_imported() -> None:
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", COUNT_COMPILES, *LAZY_MODULES],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == []


def test_nothing_is_compiled_before_the_first_use() -> None:
    pattern = lazy(rb"(?P<word>[a-z]+)\s*=")
    assert isinstance(pattern, LazyPattern)
    assert pattern.pattern == rb"(?P<word>[a-z]+)\s*="  # the source, without compiling
    assert "_compiled" not in vars(pattern)
    assert pattern.search(b"  x = 1")["word"] == b"x"  # type: ignore[index]
    assert "_compiled" in vars(pattern)


@pytest.mark.parametrize(
    ("source", "flags", "text"),
    [
        (r"^\s*(\w+)\s*:", re.MULTILINE, "a: 1\n  b_2 : x\nc d: 3\n"),
        (rb"\b(?:fused|foreach)\b", 0, b"fused=True, foreach = None, unfused"),
        (r"é+", re.IGNORECASE, "ÉéE"),
        (r"(?:\r\n|\r|\n)", 0, "a\r\nb\rc\n"),
    ],
)
def test_a_lazy_pattern_answers_as_the_compiled_one(
    source: str | bytes, flags: int, text: str | bytes
) -> None:
    now, compiled = lazy(source, flags), re.compile(source, flags)
    assert now.flags == compiled.flags and now.groups == compiled.groups
    assert [m.span() for m in now.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert now.findall(text) == compiled.findall(text)
    assert now.split(text) == compiled.split(text)
    assert now.sub(text[:0], text) == compiled.sub(text[:0], text)
    for start in range(len(text) + 1):
        found, expected = now.match(text, start), compiled.match(text, start)
        assert (found and found.span()) == (expected and expected.span())


def test_a_special_name_the_class_lacks_is_refused_without_compiling() -> None:
    pattern = lazy(r"x+")
    assert not hasattr(pattern, "__deepcopy__")  # asked by copy, pickle and the like
    assert "_compiled" not in vars(pattern)
