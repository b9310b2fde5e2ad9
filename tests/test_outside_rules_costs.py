"""Exact cheaper tests outside the rules (branch pl12): each answers as the full work it stands
in front of, on the spellings that hide a word from a plain text test, and does less of it."""

from __future__ import annotations

import dataclasses
import operator
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.project import install_readers
from amp_clipfix.project.install_readers import _arguments
from amp_clipfix.records import field, is_record, record, replace
from tests.test_yaml_scan import reads  # a config's sites and fits when composed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('RUN p"i"p in"st"all lightning==2.0.9', [("lightning==2.0.9", False)]),
        ("RUN pi\\p install 'light'ning", [("lightning", False)]),
        ("RUN 'pip' \"install\" -r 're'q.txt", [("req.txt", True)]),
        ('echo "p i p install x"; p""ip ins\'\'tall y', [("y", False)]),
        ('echo "pip" && echo "install"', []),
        ("RUN pip3 'install' x # pip install z", [("x", False)]),
    ],
)
def test_a_quoted_line_that_can_spell_the_words_is_still_read(
    text: str, expected: list[tuple[str, bool]]
) -> None:
    assert list(_arguments(text)) == expected


def test_shlex_reads_no_quoted_line_that_cannot_spell_the_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A workflow's quoted lines without `pip` and `install` (a `run: echo "..."`, a `name:
    'tests'`) are not split: Lightning's workflows had 360 of 397 such lines."""
    lexed: list[str] = []

    class Counted(shlex.shlex):
        def __init__(self, line: str, *args: object, **kwargs: object) -> None:
            lexed.append(line)
            super().__init__(line, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shlex, "shlex", Counted)
    text = "\n".join(
        [
            "name: 'tests'",
            'run: echo "installing \\"deps\\""',
            "run: python -c 'import pip'",
            "run: pip 'install' x",
        ]
    )
    assert list(install_readers._arguments(text)) == [("x", False)]
    assert lexed == ["run: pip 'install' x"]


@record(frozen=True, order=True)
class Ordered:
    path: str
    line: int = 0
    note: str = field(default="", compare=False)


@dataclasses.dataclass(frozen=True, order=True)
class OrderedTwin:
    path: str
    line: int = 0
    note: str = dataclasses.field(default="", compare=False)


@record(frozen=True, order=True)
class One:
    dotted: str


@dataclasses.dataclass(frozen=True, order=True)
class OneTwin:
    dotted: str


@pytest.mark.parametrize(
    ("left", "right"),
    [(("a", 1), ("a", 2)), (("b", 1), ("a", 9)), (("a", 1, "x"), ("a", 1, "y")), (("a",), ("a",))],
)
def test_an_ordered_record_compares_hashes_and_sorts_as_its_dataclass_twin(
    left: tuple, right: tuple
) -> None:
    """models.py's classes are records (no method compiled at import); `order=True` gives the
    dataclass's `<`, `<=`, `>`, `>=` over the compared fields, in order."""
    made, other = Ordered(*left), Ordered(*right)
    twin, other_twin = OrderedTwin(*left), OrderedTwin(*right)
    for compare in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        assert compare(made, other) == compare(twin, other_twin)
    assert hash(made) == hash(twin) and hash(other) == hash(other_twin)
    assert [vars(v) for v in sorted([other, made])] == [vars(v) for v in sorted([other_twin, twin])]
    assert (One(left[0]) < One(right[0])) == (OneTwin(left[0]) < OneTwin(right[0]))
    assert hash(One(left[0])) == hash(OneTwin(left[0]))
    with pytest.raises(TypeError):
        assert made < twin  # type: ignore[operator]  # another class: no order, as dataclasses


def test_the_models_are_records_and_replace_serves_them() -> None:
    from amp_clipfix.models import FileSites, Site, Span

    assert is_record(Site) and is_record(Span) and is_record(FileSites)
    span = Span(1, 2, 3, 4)
    assert sorted([Span(2, 0, 2, 1), span]) == [span, Span(2, 0, 2, 1)]
    assert replace(span, line=5) == Span(5, 2, 3, 4)
    assert repr(span) == "Span(line=1, column=2, end_line=3, end_column=4)"


# A word in a block scalar's text is no key: such a config is not composed (no ruamel import on
# Lightning's tree, whose GPU workflow's `run: |` passes `--trainer.precision=16`).
BLOCK_TEXT = [
    "run: |\n  bash x.sh --trainer.precision=16\n  echo done\nname: gpu\n",
    "steps:\n  - run: >-\n      python fit.py\n      precision: 16-mixed\n",
    'job:\n  script: |  # the test\n    echo "class_path: a\\\\b"\n\n    gradient_clip_val: 1\n',
    "run: !!str |\n  fused: true\n",
    "a: |\n  x\nb: |2\n   precision: bf16-mixed\n",
    'run: "|"\nx: |\n  _target_: pkg.Model\n',
]
# A word that only looks like block text: the scan lets it through, the reader finds a site.
KEY_AFTER_BLOCK = [
    "trainer:\n  - run: |\n    precision: 16-mixed\n",  # a sibling key: the scalar is empty
    "a: &t |-\n  precision\ntrainer: {*t : 16}\n",  # anchored: its text is an alias's key
    "trainer:\n  run: |\n    x\n  precision: 16-mixed\n",  # back at the key's column
    "run: |\n  echo\n---\ntrainer:\n  precision: 16-mixed\n",  # a new document
    "trainer:\n  run: '|'\n  precision: 16-mixed\n",  # a quoted `|` starts no block
    "? |\n  precision\n: 16\n",  # an explicit key's block text is the key
]


@pytest.mark.parametrize("text", BLOCK_TEXT)
def test_a_word_in_a_block_scalar_is_not_composed(text: str) -> None:
    from amp_clipfix.analysis.config_scan import may_hold_sites

    assert reads(text) == (0, 0)
    assert not may_hold_sites(text)


@pytest.mark.parametrize("text", KEY_AFTER_BLOCK)
def test_a_key_next_to_a_block_scalar_is_still_composed(text: str) -> None:
    from amp_clipfix.analysis.config_scan import may_hold_sites

    assert reads(text) != (0, 0) or text.startswith("?")
    assert may_hold_sites(text)


def test_a_broken_config_with_block_text_is_still_reported() -> None:
    from amp_clipfix.analysis.config_sites import read_config
    from amp_clipfix.sources.text import SourceError

    text = "run: |\n    a\n  precision: 16-mixed\n"  # less indented than the text: refused
    with pytest.raises(SourceError):
        read_config(Path("c.yaml"), text)


SHELL_BITS = st.sampled_from(
    ["p", "i", "ip", "pip", "install", "ins", "tall", "'", '"', "\\", " ", "#", ";", "&&", "|"]
    + ["-r", "x.txt", "lightning", "$V", "\t", "pip3", "python -m ", "\n"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(SHELL_BITS, max_size=16).map("".join))
def test_the_line_filter_gives_what_every_line_split_gives(text: str) -> None:
    """The arguments read with the filter are those read with every line split by shlex."""
    original = install_readers.shell_commands

    def unfiltered(text: str, holding: tuple[str, ...] = ()) -> Iterator[list[str]]:
        return original(text)

    filtered = list(_arguments(text))
    install_readers.shell_commands = unfiltered  # type: ignore[assignment]
    try:
        expected = list(_arguments(text))
    finally:
        install_readers.shell_commands = original
    assert filtered == expected
