"""Exact cheaper tests outside the rules (branch pl12): each answers as the full work it stands
in front of, on the spellings that hide a word from a plain text test, and does less of it."""

from __future__ import annotations

import shlex

import pytest

from amp_clipfix.project import install_readers
from amp_clipfix.project.install_readers import _arguments


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
