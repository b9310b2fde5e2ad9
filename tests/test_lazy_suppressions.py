"""What a site's suppression comments and the deferral of overlapping fixes cost follows what is
asked (issue 35): a site reads its own lines' comments, the file's strings are found only when
one of those lines may silence something, and the overlapping fixes are found once per round."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis import collect
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.fixes import changes
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


def test_overlapping_fixes_are_found_once_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three findings in one file, fixed in one run: the deferral is asked once, not per
    finding (each asking reads every finding's edits)."""
    asked: list[int] = []
    overlapping = changes.overlapping

    def spied(findings):  # type: ignore[no-untyped-def]
        asked.append(len(findings))
        return overlapping(findings)

    monkeypatch.setattr(changes, "overlapping", spied)
    (tmp_path / "legacy.py").write_text(
        "import torch\n\n\ndef run(x):\n"
        + "".join(f"    with torch.cuda.amp.autocast():\n        x = x + {n}\n" for n in range(3))
        + "    return x\n",
        encoding="utf-8",
    )
    result = amp_clipfix(tmp_path, "apply", "--yes", "--no-cache", ".", entry=False)
    assert result.code == 0, result
    assert 'torch.amp.autocast("cuda")' in (tmp_path / "legacy.py").read_text(encoding="utf-8")
    assert asked and all(count == 3 for count in asked), asked
    assert len(asked) <= 2, asked  # a round and, at most, the one after it
