"""The text scans for `import *` (contained_syntax.STAR_IMPORT) and for the names an `import`
clause writes (text_tests.IMPORT_CLAUSE) find what their first spelling, with a leading `\\b`,
found, on any text: they start each search at the word `import` and look back from it (a
leading `\\b` made `re` try every byte: about five times slower on a module's text)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.contained_syntax import STAR_IMPORT
from amp_clipfix.analysis.text_tests import IMPORT_CLAUSE, import_names

# The patterns as first written.
STAR_FROM_FIRST_BYTE = re.compile(rb"\bimport[ \t\\(\r\n]*\*")
CLAUSE_FROM_FIRST_BYTE = re.compile(rb"\bimport\s+(\([^()]*|[^\n]*)")

CASES = [
    b"from m import *",
    b"from m import(*)",
    b"from m import \\\n *",
    b"reimport *",
    b"_import *",
    b"9import *",
    b"x.import *",
    b"import os, sys",
    b"from m import (a,\n b)\nfrom n import c",
    b"importlib.import_module('x')",
    b"\xc3\xa9import *",
    b"import",
    b"",
]


def same(text: bytes) -> None:
    assert (STAR_IMPORT.search(text) is not None) is (
        STAR_FROM_FIRST_BYTE.search(text) is not None
    ), text
    assert IMPORT_CLAUSE.findall(text) == CLAUSE_FROM_FIRST_BYTE.findall(text), text


def test_the_cases_are_the_same() -> None:
    for text in CASES:
        same(text)
    assert import_names(b"from m import (a,\n b)\nfrom n import c") == {b"a", b"b", b"c"}


PIECES = st.sampled_from(
    [
        b"import",
        b"impor",
        b"t",
        b"re",
        b"_",
        b"9",
        b".",
        b" ",
        b"\t",
        b"\n",
        b"\\",
        b"(",
        b")",
        b"*",
        b",",
        b"a",
        b"\xc3\xa9",
    ]
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=12))
def test_any_text_is_the_same(pieces: list[bytes]) -> None:
    same(b"".join(pieces))
