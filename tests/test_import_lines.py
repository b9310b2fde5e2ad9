"""The searching rules' import gate (gate_texts.may_import) tries its import-statement pattern
on the lines that hold the package's name only: the pattern has no literal start, so `re`
tried it at every position of every text that holds the name (the Lightning tree: about 1% of
a cold run, 35 texts of up to 80 KB for `lightning`). A match lies on one line and ends with
the name, so the answers are the same; these tests pin both."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis import gate_texts
from amp_clipfix.analysis.gate_texts import (
    IMPORT_STATEMENT,
    import_text,
    lines_naming,
    may_import,
)
from amp_clipfix.sources.prefilter import holds, nfkc_holds

PIECES = [
    "lightning",
    "lightning_fabric",
    "import ",
    "from ",
    " as L",
    ", ",
    ".",
    ";",
    ":",
    "\n",
    "\r",
    "\r\n",
    "\\\n",
    " ",
    "\t",
    "\f",
    "x",
    "_",
    "#",
    "'",
    "ｌightning",
    "é",
    "\ufeff",
]


def whole_text(data: bytes, package: str) -> bool:
    """The gate as it was: the pattern searched over the whole text."""
    word = package.encode("ascii")
    if not holds(data, word) and not nfkc_holds(data, (word,)):
        return False
    text = import_text(data)
    return re.search(IMPORT_STATEMENT % re.escape(package), text, re.MULTILINE) is not None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=30),
    st.sampled_from(["lightning", "lightning_fabric"]),
)
def test_the_answer_is_the_whole_text_search(pieces: list[str], package: str) -> None:
    data = "".join(pieces).encode("utf-8")
    assert may_import(data, package) == whole_text(data, package)


@pytest.mark.parametrize(
    "text",
    [
        "import lightning",
        "x = 1\nimport lightning\n",
        "x = 1\r\nfrom lightning.fabric import Fabric\r\n",
        "x = 1\rimport lightning\r",
        "try: import os, lightning as L\n",
        "a = 1; from lightning import Trainer",
        "from lightning \\\n    import Trainer\n",
        "import os, \\\n    lightning\n",
        "from ｌightning import Fabric\n",
    ],
)
def test_an_import_on_a_line_among_others_is_seen(text: str) -> None:
    data = ("# a lightning-fast model\n" * 3 + text + "\nvalue = 'lightning'\n").encode()
    assert may_import(data, "lightning")
    assert whole_text(data, "lightning")


def test_an_import_after_a_byte_order_mark_is_seen() -> None:
    data = "\ufeffimport lightning\nx = 1\n".encode()
    assert may_import(data, "lightning")


def test_only_the_lines_naming_the_package_are_searched() -> None:
    text = "x = 1\n" * 1000 + "import lightning as L\n" + "y = 2\n" * 1000 + "# lightning"
    assert lines_naming(text, "lightning") == ["import lightning as L", "# lightning"]


def test_a_line_naming_the_package_twice_is_searched_once() -> None:
    text = "from lightning import lightning_module\nx = 1\n"
    assert lines_naming(text, "lightning") == ["from lightning import lightning_module"]


def test_a_text_without_the_name_has_no_line_to_search() -> None:
    assert lines_naming("import torch\n", "lightning") == []


class RecordedRe:
    """`re` as gate_texts uses it, noting each text a pattern is searched over."""

    def __init__(self) -> None:
        self.searched: list[str] = []
        self.sub, self.escape, self.MULTILINE = re.sub, re.escape, re.MULTILINE

    def compile(self, pattern: str, flags: int = 0) -> Any:
        compiled, searched = re.compile(pattern, flags), self.searched

        class Pattern:
            def search(self, text: str) -> re.Match[str] | None:
                searched.append(text)
                return compiled.search(text)

        return Pattern()

    def search(self, pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
        self.searched.append(text)
        return re.search(pattern, text, flags)


def test_the_pattern_reads_the_import_line_not_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = RecordedRe()
    monkeypatch.setattr(gate_texts, "re", recorded)
    data = ("x = 1\n" * 1000 + "import lightning as L\n" + "y = 2\n" * 1000).encode()
    assert may_import(data, "lightning")
    assert recorded.searched == ["import lightning as L"]
