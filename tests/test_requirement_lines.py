"""A requirement line's plain shape, read with string methods (project/requirement_lines.py),
reads every line as the patterns it replaces read it: the same name, the same specifier text,
the same lines refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from amp_clipfix.project.requirement_lines import canonical_name, plain_parts, requirement_name

# The patterns the module replaces, as pin_readers.py had them (the oracle here; a run compiles
# neither: tests/test_small_check_costs.py).
NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
CLAUSE = r"(?:~=|===|==|!=|<=|>=|<|>)[ \t]*[A-Za-z0-9.*+!_-]+"
SIMPLE_REQUIREMENT = (
    rf"(?P<name>{NAME})"
    rf"(?:\[[ \t]*{NAME}(?:[ \t]*,[ \t]*{NAME})*[ \t]*\])?"
    rf"[ \t]*(?P<specifier>(?:{CLAUSE}(?:[ \t]*,[ \t]*{CLAUSE})*)?)"
)
CANONICAL_RUN = r"[-_.]+"

# Every character the patterns single out, and a few they do not (a non-ASCII letter and digit,
# other blanks, a marker's and a URL's characters).
ALPHABET = "aZ09._-[], \t~=!<>*+;@()'\"#/:\n\u00e9\u0663\u00a0\u212a"
PIECES = ["lightning", "torch", "a", "x_", "[", "]", ",", " ", "\t", "==", "===", ">=", "<", "~="]
PIECES += ["!=", "2.0", "1!2.*", "2.0rc1+local", ";", "@", "(", "-", ".", "_", "\u00e9", "\n"]
LINES = st.one_of(
    st.text(alphabet=ALPHABET, max_size=30),
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
)


@settings(max_examples=3000, deadline=None)
@given(LINES)
@example("lightning[extra] >= 2.0, < 3")
@example("lightning [x]")
@example("lightning ")
@example("lightning>=2.0 ")
@example("lightning>=2.0,")
@example("lightning>=1,,<2")
@example("lightning[]")
@example("lightning[a,]>=2")
@example("lightning[ a , b ]\t>=\t2 ,\t< 3")
@example("torch===2.0")
@example("torch<=")
@example("torch<=2.0; python_version>'3'")
@example("-lightning")
@example("lightning-")
@example("\u212aelvin")
def test_a_line_reads_as_the_pattern_read_it(line: str) -> None:
    match = re.fullmatch(SIMPLE_REQUIREMENT, line)
    expected = None if match is None else (match["name"], match["specifier"])
    assert plain_parts(line) == expected


@given(LINES)
@example("._lightning")
@example("a.")
@example("a..b-")
def test_a_lines_name_is_what_the_pattern_matched(line: str) -> None:
    match = re.match(NAME, line)
    assert requirement_name(line) == (None if match is None else match[0])


@given(st.text(alphabet="aB-_.\u00e9 ", max_size=20))
@example("Pytorch__Lightning")
@example("a-._b")
def test_a_canonical_name_is_what_the_substitution_made(name: str) -> None:
    assert canonical_name(name) == re.sub(CANONICAL_RUN, "-", name).lower()


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ("lightning>=2.0,<3", ("lightning", ">=2.0,<3")),
        ("pytorch_lightning[extra] ==1.9.5", ("pytorch_lightning", "==1.9.5")),
        ("torch ~= 2.4", ("torch", "~= 2.4")),
        ("rich", ("rich", "")),
        ("lightning>=2.0; python_version > '3.8'", None),
        ("lightning @ https://example.invalid/l.whl", None),
        ("lightning (>=2.0)", None),
    ],
)
def test_common_lines(line: str, parts: tuple[str, str] | None) -> None:
    assert plain_parts(line) == parts
