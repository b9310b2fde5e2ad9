"""The plain shape most requirement lines are written in, read with string methods.

`lightning[extra] >= 2.0, < 3`: a name, extras, version clauses, and nothing else (no marker,
URL or parentheses). A line of that shape is read with `SpecifierSet` alone; any other goes to
`packaging.requirements.Requirement` (project/pin_readers.py). The shape was a regular
expression, and Python compiles one with Python code: that pattern cost ~3.5 M instructions
(~1 ms) of every run reading a pin, 1.6% of a 25-file project's `check`; these few string tests
read the same lines (tests/test_requirement_lines.py checks them against that pattern).
"""

from __future__ import annotations

_LETTERS_AND_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# A name (PEP 508): letters and digits, with `.`, `-` and `_` between them.
_NAME_CHARACTERS = _LETTERS_AND_DIGITS + "._-"
_NAME_PUNCTUATION = "._-"
# A plain clause's version: `2.0`, `2.*`, `1!2.0rc1`, `2.0+local` (SpecifierSet judges it).
_VERSION_CHARACTERS = _LETTERS_AND_DIGITS + ".*+!_-"
# Where one operator starts another, the longer first: `===` before `==`, `<=` before `<`.
_OPERATORS = ("~=", "===", "==", "!=", "<=", ">=", "<", ">")
_BLANKS = " \t"


def requirement_name(line: str) -> str | None:
    """The name `line` starts with (`lightning` of `lightning[x]>=2`), or None: the longest
    start of name characters, up to its last letter or digit, when it starts with one."""
    run = line[: len(line) - len(line.lstrip(_NAME_CHARACTERS))].rstrip(_NAME_PUNCTUATION)
    return run if run[:1].isalnum() else None


def plain_parts(line: str) -> tuple[str, str] | None:
    """The name and the specifier text (`>= 2.0, < 3`, or empty) of a line in the plain shape:
    a name; extras right after it (`[a, b]`: names between blanks and commas); blanks; then
    clauses (an operator, blanks, a version) separated by commas with blanks around them, the
    last ending the line. None for a line of any other shape."""
    name = requirement_name(line)
    if name is None:
        return None
    rest = line[len(name) :]
    if rest[:1] == "[":
        extras, bracket, rest = rest[1:].partition("]")
        if not bracket or not all(_is_name(extra.strip(_BLANKS)) for extra in extras.split(",")):
            return None
    specifier = rest.lstrip(_BLANKS)
    if not specifier:
        return name, specifier
    if specifier[-1] in _BLANKS:  # blanks may follow a comma, not the last clause
        return None
    if not all(_is_clause(clause.strip(_BLANKS)) for clause in specifier.split(",")):
        return None
    return name, specifier


def _is_name(text: str) -> bool:
    return requirement_name(text) == text


def _is_clause(clause: str) -> bool:
    """`>= 2.0`: an operator, blanks, a version. The operator is the first of _OPERATORS the
    clause starts with: no version starts with `=` or a blank, so no other reading matches."""
    operator = next((operator for operator in _OPERATORS if clause.startswith(operator)), "")
    if not operator:
        return False
    version = clause[len(operator) :].lstrip(_BLANKS)
    return bool(version) and not version.strip(_VERSION_CHARACTERS)


def canonical_name(name: str) -> str:
    """A distribution's name as PEP 503 compares it (`Pytorch_Lightning` -> pytorch-lightning):
    each run of `-`, `_` and `.` one `-`, lower case."""
    if "_" in name or "." in name:
        name = name.replace("_", "-").replace(".", "-")
    while "--" in name:
        name = name.replace("--", "-")
    return name.lower()
