"""Shared set-up for the runtime tests, which run real torch and Lightning on the CPU."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from packaging.requirements import Requirement
from programs import PROGRAMS

import noxfile

REQUIRED = {"torch": "2.13.0", "lightning": "2.6.6"}
MAKE_RELEASES = "nox -t releases"


@functools.cache
def release_problem(requirements: tuple[str, ...]) -> str | None:
    """Why the environment `noxfile.py` makes for this release cannot run its cases (missing, or
    holding a version a requirement line excludes), or None when it can."""
    python = noxfile.python_of(list(requirements))
    if not python.exists():
        return f"{python} is missing"
    wanted = [Requirement(line) for line in (noxfile.TORCH, *requirements)]
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "def version(name):\n"
        "    try:\n        return m.version(name)\n"
        "    except m.PackageNotFoundError:\n        return None\n"
        "print(json.dumps({name: version(name) for name in json.loads(sys.argv[1])}))"
    )
    names = json.dumps([requirement.name for requirement in wanted])
    found = subprocess.run([str(python), "-c", probe, names], capture_output=True, text=True)
    if found.returncode != 0:
        return f"{python} does not run: {found.stderr.strip()[-500:]}"
    installed = json.loads(found.stdout)
    wrong = [
        f"{requirement.name} {installed[requirement.name] or 'missing'} (wants {requirement})"
        for requirement in wanted
        if installed[requirement.name] is None
        or not requirement.specifier.contains(installed[requirement.name], prereleases=True)
    ]
    return f"{python} holds {', '.join(wrong)}" if wrong else None


@pytest.fixture(scope="session")
def require_release() -> Callable[[tuple[str, ...]], None]:
    """Call with a case's `"runtime"` list (empty: this interpreter). Fails, never skips, when
    that release's environment is missing or stale: the proof on every release the fixtures name
    is part of every full run."""

    def require(requirements: tuple[str, ...]) -> None:
        if requirements and (problem := release_problem(requirements)):
            message = f"{problem}; create the release environments with `{MAKE_RELEASES}`"
            pytest.fail(message, pytrace=False)

    return require


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None when it is missing."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pytest_report_header() -> list[str]:
    """Say which torch and Lightning the runtime facts were checked against."""
    found = ", ".join(f"{name} {installed_version(name)}" for name in REQUIRED)
    releases = ", ".join(
        f"{name} ({'ready' if release_problem(tuple(wanted)) is None else 'missing'})"
        for name, wanted in noxfile.releases().items()
    )
    return [
        f"amp-clipfix runtime tests: {found} ({sys.executable})",
        f"release environments (.nox/, `{MAKE_RELEASES}`): {releases or 'none'}",
    ]


@pytest.fixture(scope="session", autouse=True)
def real_libraries() -> None:
    """Fail, never skip, when torch or Lightning is missing: these tests are the proof it works."""
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        wanted = " ".join(f"{name}=={version}" for name, version in REQUIRED.items())
        pytest.fail(
            f"the runtime tests need {', '.join(missing)} importable from {sys.executable}; "
            f"install them with `{sys.executable} -m pip install {wanted}` "
            "(or `pip install -e . --group test`).",
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def fork_servers() -> Iterator[None]:
    """The fork servers the runtime modules share (programs.py) end with the session."""
    yield
    PROGRAMS.close()
