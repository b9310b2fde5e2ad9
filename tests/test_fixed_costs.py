"""Costs every run pays per file (branch `hook`, session 23). `sources.adapter_for` keeps its
answer per path (by the path's text): the suffix is worked out once per path, not at each of
the ~12 asks a file gets in a run; the answer is the one the suffix gives, and the memo is
bounded. `paths.is_library` answers no at once for a path with no library folder name: the
answers of the whole rules."""

from __future__ import annotations

import random
from pathlib import Path, PurePosixPath

import pytest

from amp_clipfix import paths, sources
from amp_clipfix.sources import adapter_for


class CountedPath(type(Path())):  # type: ignore[misc]
    """A path that counts how often its suffix is asked."""

    asked = 0

    @property
    def suffix(self) -> str:
        CountedPath.asked += 1
        return super().suffix


def test_a_path_s_suffix_is_worked_out_once(tmp_path: Path) -> None:
    path = CountedPath(tmp_path / "memo_once" / "module.py")
    first = adapter_for(path)  # the suffix asked (by the adapters' `handles` too)
    CountedPath.asked = 0
    for _ in range(5):
        assert adapter_for(path) is first
    assert CountedPath.asked == 0


@pytest.mark.parametrize(
    "name", ["a.py", "a.ipynb", "a.yaml", "a.yml", "a.YAML", "a.IPYNB", "a", ".ipynb", "a.py.bak"]
)
def test_the_answer_is_the_suffix_s(tmp_path: Path, name: str) -> None:
    path = tmp_path / "memo_suffix" / name
    expected = next(adapter for adapter in sources.ADAPTERS if adapter.handles(path))
    assert adapter_for(path) is expected
    assert adapter_for(Path(str(path))) is expected


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "BY_PATH", 3)
    for index in range(10):
        adapter_for(Path(str(PurePosixPath("/memo_bound") / f"m{index}.py")))
        assert len(sources._BY_PATH) <= 3


def whole_rules(path: Path) -> bool:
    """`is_library` as it was written before: the folder rules asked of every path."""
    parts = path.parts
    if paths.LIBRARY_DIRS & set(parts):
        return True
    for package in paths.LIGHTNING_PACKAGES:
        width = len(package)
        for index in range(len(parts) - width):
            if tuple(parts[index : index + width]) == package:
                return True
    return False


def test_is_library_answers_as_the_whole_rules() -> None:
    """Random paths of library folder names, their look-alikes and others."""
    generator = random.Random(23)
    words = [*sorted(paths.LIBRARY_NAMES), "pytorch", "fabric", "src", "pkg", "torch.py", "a.py"]
    words += ["Lightning", "site_packages", "lightning_fabric.py"]
    for _ in range(20_000):
        parts = [generator.choice(words) for _ in range(generator.randrange(0, 6))]
        path = Path("/", *parts)
        assert paths.is_library(path) == whole_rules(path), path
