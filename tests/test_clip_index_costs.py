"""What ACF004's clip and event indexes ask of a project (analysis/clip_tail.py,
analysis/event_capable.py): a call is asked whether it may run an index function only of the
functions its name names (`may_call` answers no for any other before it asks anything), and a
file's text is searched for `import *` once per index however many of its functions' names
the file writes (yolov5: 30,138 `may_call`s and 1,359 searches of 52 texts before), and a
module's `from` imports are listed once per index (yolov5: 253 walks of a module's statements
before). The same
findings as before either way (test_clip_tail, test_any_event)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from test_clip_tail import loop, report, write

from amp_clipfix.analysis import clip_tail, module_holders
from amp_clipfix.analysis.summary import Summary, called_name

# clip_a clips; clip_b and clip_c reach it one and two levels up: all three join the index
CHAIN = """
import torch


def clip_a(model):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


def clip_b(model):
    clip_a(model)


def clip_c(model):
    clip_b(model)
"""

# a file writing the three names without importing them: each function's callers are looked
# for in it, which asks whether it imports `*`
MENTIONS = "# clip_a, clip_b and clip_c are in helpers.py\nVALUE = 1\n"

FILES = {
    "train.py": loop("from helpers import clip_c", "clip_c(model)"),
    "helpers.py": CHAIN,
    "notes.py": MENTIONS,
}


class CountedPattern:
    """STAR_IMPORT as it is, its searches counted by text."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern.pattern
        self.flags = pattern.flags
        self.compiled = pattern
        self.searched: dict[bytes, int] = {}

    def search(self, text: bytes) -> re.Match[bytes] | None:
        self.searched[text] = self.searched.get(text, 0) + 1
        return self.compiled.search(text)


def test_a_call_is_asked_of_the_index_functions_its_name_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str | None, str]] = []
    original = clip_tail.ClipCapable.may_call

    def may_call(
        self: clip_tail.ClipCapable, call: ast.Call, summary: object, function: clip_tail.Found
    ) -> bool:
        asked.append((called_name(call.func), function.node.name))
        return original(self, call, summary, function)  # type: ignore[arg-type]

    monkeypatch.setattr(clip_tail.ClipCapable, "may_call", may_call)
    write(tmp_path, FILES)
    assert "ACF004" in report(tmp_path)  # clip_c's clip comes before the scaler's step
    assert ("clip_c", "clip_c") in asked  # the loop's call, asked of its own function
    assert all(name == function for name, function in asked), sorted(set(asked))


def test_a_text_is_searched_for_a_star_import_once_per_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = CountedPattern(clip_tail.STAR_IMPORT)
    monkeypatch.setattr(clip_tail, "STAR_IMPORT", counted)
    write(tmp_path, FILES)
    assert "ACF004" in report(tmp_path)
    searched = counted.searched.get((tmp_path / "notes.py").read_bytes(), 0)
    # the clip index (whose answers the event index shares) and the index of what comes
    # before a clip: once each at most, for the three names notes.py writes
    assert 1 <= searched <= 2, counted.searched


def test_a_module_s_import_statements_are_listed_once_per_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`imports_from` is asked of train.py for each reading that meets `clip_c(model)`; the
    module's statements are walked for its `from` imports once per index that asks."""
    asked: list[str] = []
    listed: list[str] = []
    original_asked = module_holders.ModuleHolders.imports_from
    original_listed = Summary.walked_statements

    def imports_from(
        self: module_holders.ModuleHolders, summary: Summary, name: str, modules: set[str]
    ) -> bool:
        asked.append(summary.path.name)
        return original_asked(self, summary, name, modules)

    def walked_statements(self: Summary) -> list[ast.stmt]:
        if sys._getframe(1).f_code.co_filename == module_holders.__file__:
            listed.append(self.path.name)
        return original_listed(self)

    monkeypatch.setattr(module_holders.ModuleHolders, "imports_from", imports_from)
    monkeypatch.setattr(Summary, "walked_statements", walked_statements)
    write(tmp_path, FILES)
    assert "ACF004" in report(tmp_path)
    indexes = 3  # the clip index, the event index, the index of what comes before a clip
    assert asked.count("train.py") > indexes, asked
    assert listed.count("train.py") <= indexes, listed
