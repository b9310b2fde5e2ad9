"""A plain `import name` line is found from its `import` (analysis/module_objects.py
`plain_import_lines`), where `re` looks for the pattern's literal start fast, and gives the
lines the pattern anchored at each line's start gave: the same starts, in the same order
(yolov5: 45 ms of `re` at every position of 0.9 MB before)."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.module_objects import plain_import_lines


def anchored(data: bytes, name: str) -> list[int]:
    """The starts the pattern module_objects.py had found (the oracle here)."""
    word = re.escape(name.encode("ascii"))
    pattern = rb"^[ \t]*import[ \t]+" + word + rb"[ \t]*(?:as[ \t]|,|;|#|\r?$)"
    return [match.start() for match in re.finditer(pattern, data, re.M)]


PIECES = [b"import", b"import ", b" ", b"\t", b"\n", b"\r", b"\r\n", b"train", b"trains"]
PIECES += [b"as", b"as ", b",", b";", b"#", b"x", b".", b"imp", b"ort", b"\\", b"'", b'"""', b"\f"]
TEXTS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=16).map(b"".join),
    st.binary(max_size=40),
)
NAMES = st.sampled_from(["train", "import", "as", "t", "x.y"])


@settings(max_examples=3000, deadline=None)
@given(TEXTS, NAMES)
@example(b"import train\n", "train")
@example(b"  \timport train as t\n", "train")
@example(b"x = 1; import train\n", "train")
@example(b"import import train\n", "train")
@example(b"import train, os\r\nimport train\r", "train")
@example(b"\f import train\n", "train")
@example(b"import importer\n", "importer")
@example(b"import trains\nimport train#\n", "train")
def test_the_lines_the_anchored_pattern_found(data: bytes, name: str) -> None:
    assert plain_import_lines(data, name) == anchored(data, name)
