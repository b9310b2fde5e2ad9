"""Marks for the whole suite: the runtime proof (real torch and Lightning) is `runtime`.

`python -m pytest` leaves it out for a quick local run (a few minutes); CI and the README's test
command select everything with `-m "runtime or not runtime"`. Where torch or Lightning is not
installed, the quick run still collects and passes: each test that needs them (the runtime
proof, `@pytest.mark.needs("lightning")`) is skipped with the missing package named. A run that
selects the runtime tests accepts no skip at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

RUNTIME_TESTS = Path(__file__).resolve().parent / "runtime"
RUNTIME_CASES = Path(__file__).resolve().parent.parent / "fixtures" / "runtime"


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


RUNTIME_LIBRARIES = ("torch", "lightning")
NOT_INSTALLED = "not installed here (pip install -e . --group test installs it)"


def not_installed(names: tuple[str, ...]) -> str | None:
    """The skip reason of a test that needs these packages, or None when all are installed."""
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    return f"needs {' and '.join(missing)}: {NOT_INSTALLED}" if missing else None


def selects_runtime(config: pytest.Config) -> bool:
    """Whether the run's `-m` expression keeps a test marked `runtime`."""
    from _pytest.mark.expression import Expression

    expression = config.option.markexpr
    return not expression or Expression.compile(expression).evaluate(
        lambda name, **_: name == "runtime"
    )


# --- phases: the static tests first, then the runtime proof release by release ------------------

STATIC = "static tests (the code, its output, the fixtures; no training)"
THIS_INTERPRETER = "runtime proof on this interpreter's torch and Lightning"


def _case_releases() -> dict[str, str]:
    """{runtime case: the release its program runs on (the first line of its `runtime` list)}."""
    releases = {}
    for spec in RUNTIME_CASES.glob("*/case.json"):
        try:
            wanted = json.loads(spec.read_text(encoding="utf-8")).get("runtime")
        except (OSError, ValueError):
            continue  # tests/runtime says what is wrong with it
        releases[spec.parent.name] = wanted[0] if wanted else ""
    return releases


CASE_RELEASES = _case_releases()


def phase_of(nodeid: str) -> tuple[int, str]:
    """(order, header) of a test by its node id, which is all an xdist controller sees: runtime
    tests by the release their case names in its parameters (`[case]`, `[case-strategy]`)."""
    path = nodeid.split("::", 1)[0].replace("\\", "/")
    if "/runtime/" not in f"/{path}":
        return 0, STATIC
    parameters = nodeid.rpartition("[")[2].rstrip("]") if nodeid.endswith("]") else ""
    cases = [c for c in CASE_RELEASES if parameters == c or parameters.startswith(c + "-")]
    release = CASE_RELEASES[max(cases, key=len)] if cases else ""
    if not release:
        return 1, THIS_INTERPRETER
    order = 2 + sorted({r for r in CASE_RELEASES.values() if r}).index(release)
    return order, f"runtime proof on {release} (its nox environment)"


class PhaseHeaders:
    """Says which phase the run is in when the first test of a phase starts. Registered on the
    process that prints: the xdist controller, which hears of each test a worker starts (or
    the only process, without xdist); never on a worker."""

    def __init__(self, reporter: pytest.TerminalReporter) -> None:
        self.reporter = reporter
        self.shown: set[int] = set()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        order, header = phase_of(nodeid)
        if order not in self.shown:
            self.shown.add(order)
            writer = getattr(self.reporter, "_tw", None)  # after progress dots: a new line
            if writer is not None and writer.width_of_current_line:
                self.reporter.write("\n")
            self.reporter.write_line(f"--- phase: {header}", bold=True)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(PhaseHeaders(reporter), "amp-clipfix-phases")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The static tests first, then the runtime proof release by release (stable: each phase
    # keeps its files' order, and a runtime case's xdist group stays together).
    items.sort(key=lambda item: phase_of(item.nodeid)[0])
    runtime_missing = not_installed(RUNTIME_LIBRARIES)
    quick = not selects_runtime(config)
    for item in items:
        needs = item.get_closest_marker("needs")
        reason = not_installed(tuple(needs.args)) if needs else None
        if RUNTIME_TESTS in Path(str(item.path)).parents:
            if runtime_missing and quick:  # reported as skipped, and why, not left out unsaid
                reason = runtime_missing
            else:
                item.add_marker(pytest.mark.runtime)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A skipped test fails the run: every test runs everywhere the README's command runs, and
    one that cannot says what it needs by failing. The one exception is a quick run (runtime
    tests not selected) where torch or Lightning is not installed: a test that needs them is
    skipped, saying which."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller counts
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    reports = reporter.stats.get("skipped", []) if reporter else []
    quick = not selects_runtime(session.config)
    skipped = [r for r in reports if not (quick and NOT_INSTALLED in skip_reason(r))]
    if skipped and session.exitstatus == pytest.ExitCode.OK:
        reporter.ensure_newline()
        message = f"{len(skipped)} skipped: no test may skip (tests/conftest.py)"
        reporter.write_line(message, red=True)
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


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled sample project, with the current folder set to its parent (a
    module's own `sample` fixture, where it has one, takes precedence)."""
    project = tmp_path / "sample_project"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples" / "sample_project", project)
    monkeypatch.chdir(tmp_path)
    return project


@pytest.fixture
def cached_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder for a project the test writes, checked with the cache on (the suite turns
    it off), its secret in a user cache folder of this test's own."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return tmp_path / "project"
