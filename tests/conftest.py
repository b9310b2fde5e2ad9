"""Marks for the whole suite: the runtime proof (real torch and Lightning) is `runtime`.

`python -m pytest` skips it for a quick local run (a few minutes); CI and the README's test
command select everything with `-m "runtime or not runtime"`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A skipped test fails the run: every test runs everywhere the README's command runs, and
    one that cannot says what it needs by failing."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller counts
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped and session.exitstatus == pytest.ExitCode.OK:
        reporter.ensure_newline()
        reporter.write_line(f"{skipped} skipped: no test may skip (tests/conftest.py)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# Fixture trees are compared byte for byte: no cache folder in them, also from session-scoped
# fixtures and subprocesses (tests/test_cache.py turns the cache on where it is the subject).
os.environ["AMP_CLIPFIX_NO_CACHE"] = "1"


NOBODY = 65534  # the unprivileged user (and group) of Linux systems


class OrdinaryUser:
    """Run a block with an ordinary user's file permissions. Root reads a chmod 000 file, so for
    root (as in most containers) the block runs with the effective ids of `nobody`, in a
    folder `nobody` owns; for anyone else it is a plain block in the test's own folder. Files the
    block creates belong to that user, so the code under test may also rewrite them."""

    def __init__(self, folder: Path, switch: bool) -> None:
        self.folder = folder
        self._switch = switch

    def __enter__(self) -> Path:
        if self._switch:
            os.setgroups([])
            os.setegid(NOBODY)
            os.seteuid(NOBODY)
        return self.folder

    def __exit__(self, *exception: object) -> None:
        if self._switch:
            os.seteuid(0)
            os.setegid(0)
            os.setgroups([0])


@pytest.fixture
def ordinary_user(tmp_path: Path) -> Iterator[OrdinaryUser]:
    if os.geteuid() != 0:
        yield OrdinaryUser(tmp_path, switch=False)
        return
    folder = Path(tempfile.mkdtemp(prefix="amp-clipfix-nobody-"))  # tmp_path's parents are 0700
    os.chown(folder, NOBODY, NOBODY)
    try:
        yield OrdinaryUser(folder, switch=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
