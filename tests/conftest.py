"""Marks for the whole suite: the runtime proof (real torch and Lightning) is `runtime`.

`python -m pytest` skips it for a quick local run (a few minutes); CI and the README's test
command select everything with `-m "runtime or not runtime"`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

RUNTIME_TESTS = Path(__file__).resolve().parent / "runtime"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if RUNTIME_TESTS in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.runtime)


# Fixture trees are compared byte for byte: no cache folder in them, also from session-scoped
# fixtures and subprocesses (tests/test_cache.py turns the cache on where it is the subject).
os.environ["AMP_CLIPFIX_NO_CACHE"] = "1"
