"""The reach index's value question past its search budget (analysis/reach.py `value_files`):
a name no file writes other than as a method call (`x.item()`) is given a value by no file, and
the answer says so (it raised IndexError once the search had read its share of the project's
files); a name some file writes freely is still answered "may" by that file, unparsed."""

from __future__ import annotations

import re
import types
from pathlib import Path

from amp_clipfix.analysis import reach
from amp_clipfix.analysis.bound_names import FileNames

CALLED_ONLY = b"def f(x):\n    return x.item()\n"
FREE = b"def g(item):\n    return item\n"


class Evaluator:
    """What CallReach's value question asks of the evaluator: the texts, the files writing a
    word, and whether a file was parsed (none here)."""

    def __init__(self, contents: dict[Path, bytes]) -> None:
        self.contents = contents
        self.summaries: dict[Path, object] = {}
        self.promised: set[Path] = set()

    def files_naming(self, word: bytes) -> list[Path]:
        pattern = rb"(?<![\w])" + re.escape(word) + rb"(?![\w])"
        return [path for path, data in self.contents.items() if re.search(pattern, data)]

    def has_summary(self, path: Path) -> bool:
        return False


def past_its_budget(contents: dict[Path, bytes]) -> reach.CallReach:
    """A reach index that has read more files' names than one search may (`over_budget`)."""
    index = reach.CallReach(types.SimpleNamespace(evaluator=Evaluator(contents)))  # type: ignore[arg-type]
    read = reach.SEARCH_FILES_READ + 1
    index.files = {Path(f"read{n}.py"): FileNames() for n in range(read)}
    assert index.over_budget([])
    return index


def test_a_name_only_called_as_a_method_has_no_value_past_the_budget() -> None:
    index = past_its_budget({Path("a.py"): CALLED_ONLY})
    assert index.value_files("item") is None
    assert index.value_bound("item") is False


def test_a_name_written_freely_past_the_budget_may_have_one() -> None:
    index = past_its_budget({Path("a.py"): CALLED_ONLY, Path("b.py"): FREE})
    assert index.value_files("item") == Path("b.py")
    assert index.value_bound("item") is True
