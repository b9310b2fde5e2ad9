"""discover._dedupe keeps the names of a file only where it has several hard links (branch
`hook36`): only those can be `linked_inside`, and a set of names made for every file found
cost the hook's command ~3,000 sets on NeMo. Plain files, hard links found whole or in part,
and symbolic links give the answers the walk's files always got."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amp_clipfix import observed
from amp_clipfix.project import discover as discover_module
from amp_clipfix.project.discover import _dedupe, _Found


def found_files(root: Path) -> list[_Found]:
    """40 plain modules; `a.py` with a second name found too, `b.py` with one found and one
    outside; a symbolic link to `c.py`."""
    inside, outside = root / "project", root / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    for number in range(40):
        (inside / f"m{number}.py").write_text("x = 1\n", encoding="utf-8")
    for name in ("a.py", "b.py", "c.py"):
        (inside / name).write_text("y = 2\n", encoding="utf-8")
    os.link(inside / "a.py", inside / "a_twin.py")
    os.link(inside / "b.py", outside / "b_twin.py")
    (inside / "c_link.py").symlink_to("c.py")
    names = sorted(inside.iterdir())
    return [_Found(path, inside, path.is_symlink()) for path in names]


@pytest.mark.skipif(not hasattr(os, "link"), reason="hard links")
def test_names_are_kept_for_hard_linked_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = found_files(tmp_path)
    made: list[object] = []

    class CountedSet(set):  # type: ignore[type-arg]
        def __init__(self, *items: object) -> None:
            made.append(self)
            super().__init__(*items)

    monkeypatch.setattr(discover_module, "set", CountedSet, raising=False)
    with observed.Recording():
        chosen, linked_inside, several = _dedupe(found)
    inside = tmp_path / "project"
    assert len(made) == 3  # one per name of a hard-linked file found: 44 without the change
    assert several
    assert linked_inside == {inside / "a.py"}  # both names found; b.py has one outside
    chosen_paths = [item.path for item in chosen]
    assert chosen_paths == [
        inside / "a.py",
        inside / "b.py",
        inside / "c.py",
        *(inside / f"m{number}.py" for number in sorted(range(40), key=str)),
    ]
