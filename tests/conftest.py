"""Marks for the whole suite: the runtime proof (real torch and Lightning) is `runtime`.

`python -m pytest` skips it for a quick local run (a few minutes); CI and the README's test
command select everything with `-m "runtime or not runtime"`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

RUNTIME_TESTS = Path(__file__).resolve().parent / "runtime"


def _own_user_cache() -> str:
    """The cache seals its entries with a secret in the user's cache folder
    (cache_layout.secret): the suite, and the subprocesses it starts, get a folder of their
    own, removed at the end, never the real one."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="amp-clipfix-tests-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


os.environ["XDG_CACHE_HOME"] = _own_user_cache()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if RUNTIME_TESTS in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.runtime)


# Fixture trees are compared byte for byte: no cache folder in them, also from session-scoped
# fixtures and subprocesses (tests/test_cache.py turns the cache on where it is the subject).
os.environ["AMP_CLIPFIX_NO_CACHE"] = "1"
