"""The prefilter's call tests (sources/call_texts.py): the answers of the patterns as first
written, found without trying a pattern at every byte of a module."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.sources import call_texts
from amp_clipfix.sources.call_texts import assigned_aliases, calls_any
from amp_clipfix.sources.prefilter import (
    CONFIG_DOCUMENT_CALLS,
    OPTIMIZER_CALLS,
    TRAINER_CALLS,
    may_configure_trainer,
)

FIRST_ALIAS = re.compile(rb"\b(\w+)\s+as\s+(\w+)")


def first_calls_any(data: bytes, wanted: frozenset[str], with_arguments: bool = False) -> bool:
    """calls_any as it was first written: the alias pattern over the whole text, `\\b` first."""
    names = set(wanted)
    for match in FIRST_ALIAS.finditer(data):
        if match.group(1).decode("ascii", "replace") in wanted:
            names.add(match.group(2).decode("ascii", "replace"))
    names.update(assigned_aliases(data, wanted))
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    arguments = r"\s*[^)\s]" if with_arguments else ""
    call = re.compile(rf"\b(?:{alternatives})\s*\({arguments}".encode("ascii"))
    return call.search(data) is not None


WANTED = [(TRAINER_CALLS, True), (OPTIMIZER_CALLS, False), (CONFIG_DOCUMENT_CALLS, True)]
PIECES = [
    *(name.encode() for name in TRAINER_CALLS | OPTIMIZER_CALLS | CONFIG_DOCUMENT_CALLS),
    b"T",
    b"make",
    b"x",
    b"1",
    b"_",
    b"\xc3\xa9",
    b"as",
    b"import",
    b"from",
    b"self.",
    b"L.",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"(",
    b")",
    b"=",
    b":",
    b",",
    b"#",
    b".",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.sampled_from(WANTED))
def test_calls_any_answers_as_first_written(pieces: list[bytes], case: Any) -> None:
    wanted, with_arguments = case
    data = b"".join(pieces)
    assert calls_any(data, wanted, with_arguments) == first_calls_any(data, wanted, with_arguments)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"trainer = Trainer(max_epochs=1)\n", True),
        (b"Trainer(1)", True),  # at the text's start
        (b"t = Trainer (\n    precision=16)\n", True),
        (b"t = Trainer()\n", False),  # no argument
        (b"t = MyTrainer(1)\n", False),  # inside a longer name
        (b"t = _Trainer(1)\n", False),
        (b"t = 1Trainer(1)\n", False),  # a digit is a word byte too
        (b"t = \xc3\xa9Trainer(1)\n", True),  # a byte outside ASCII is no word byte to `\b`
        (b"from lightning import Trainer as T\nt = T(1)\n", True),
        (b"from lightning import Trainer as T\nt = XT(1)\n", False),
        (b"import a as Trainer as T\nT(1)\n", False),  # the alias pattern's own overlap
        (b"make = L.Trainer\ntrainer = make(1)\n", True),
        (b"self.make = pl.Trainer  # a factory\nself.make(1)\n", True),
        (b"with open(p) as T:\n    T(1)\n", False),
    ],
)
def test_calls_any_reads_calls_and_aliases(data: bytes, expected: bool) -> None:
    assert calls_any(data, TRAINER_CALLS, with_arguments=True) is expected
    assert first_calls_any(data, TRAINER_CALLS, with_arguments=True) is expected


class CountedFinditer:
    """IMPORT_ALIAS with its word-by-word searches counted."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern, self.searches = pattern, 0

    def finditer(self, data: bytes) -> Any:
        self.searches += 1
        return self.pattern.finditer(data)


def test_a_text_with_no_wanted_name_before_as_is_not_matched_word_by_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = CountedFinditer(call_texts.IMPORT_ALIAS)
    monkeypatch.setattr(call_texts, "IMPORT_ALIAS", counted)
    module = b"import numpy as np\nfrom lightning import Trainer\n\nTrainer(max_epochs=np.e)\n"
    assert may_configure_trainer(module)
    assert not calls_any(b"import numpy as np\nx = Trainers(1)\n", TRAINER_CALLS)
    assert counted.searches == 0
    aliased = b"from lightning import Trainer  as  T\nT(max_epochs=1)\n"
    assert may_configure_trainer(aliased)
    assert counted.searches == 1


def test_the_call_pattern_starts_with_the_names() -> None:
    """What makes `re` skip to a name: no `\\b` or class before the first name's bytes."""
    pattern = call_texts.call_of(("Trainer", "make"), True)
    assert pattern.pattern.startswith(b"(?:Trainer")
    assert pattern.search(b"x = make (1)") is not None
    assert pattern.search(b"x = remake(1)") is None
