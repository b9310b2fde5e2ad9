"""What a site's suppression comments cost follows what is asked (issue 35): a site reads its
own lines' comments, and the file's strings are found only when one of those lines may silence
something, once."""

from __future__ import annotations

import ast

import pytest

from amp_clipfix.analysis import collect
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.models import ALL_CODES

CODE = (
    "import torch\n"
    "a = torch.optim.AdamW(p, fused=True)\n"
    'b = torch.optim.AdamW(p, fused=True, name="# noqa: ACF001")\n'
    "c = torch.optim.AdamW(p, fused=True)  # noqa: ACF001\n"
    "d = 1  # noqa\n"
)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each walk of a tree for its strings, counted."""
    counted: list[int] = []
    extents = collect.string_extents

    def spied(tree: ast.Module) -> list[collect.Extent]:
        counted.append(1)
        return extents(tree)

    monkeypatch.setattr(collect, "string_extents", spied)
    return counted


def suppressions() -> dict[int, frozenset[str]]:
    tree = ast.parse(CODE)
    return collect.comment_suppressions(SourceText(CODE, tree), tree)


def test_a_line_without_a_suppressing_comment_walks_nothing(walks: list[int]) -> None:
    found = suppressions()
    assert (found.get(1, ()), found.get(2, ())) == (frozenset(), frozenset())
    assert walks == []


def test_the_strings_are_found_once_and_only_when_a_line_may_silence(walks: list[int]) -> None:
    found = suppressions()
    assert found.get(3, ()) == frozenset()  # the `#` is inside a string
    assert found.get(4, ()) == frozenset({"ACF001"})
    assert found.get(5, ()) == frozenset({ALL_CODES})
    assert found.get(99, ()) == frozenset()  # past the end: nothing
    assert walks == [1]
