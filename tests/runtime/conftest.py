"""Shared set-up for the runtime tests, which run real torch and Lightning on the CPU."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Callable

import pytest
import runtime_venvs

REQUIRED = {"torch": "2.13.0", "lightning": "2.6.6"}
VENV_SCRIPT = "scripts/runtime_venvs.py"


def is_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def require_release() -> Callable[[str | None], None]:
    """Call with a case's release (a `.venvs/<name>`; None for this interpreter). A missing or
    stale venv fails under CI=true (the multi-release proof must run there) and skips locally,
    saying how to make it."""

    def require(name: str | None) -> None:
        wanted = runtime_venvs.wanted_venvs()
        if name is None or runtime_venvs.is_ready(name, wanted.get(name, [])):
            return
        message = (
            f"the runtime venv .venvs/{name} is missing or out of date; create it with "
            f"`python {VENV_SCRIPT}`"
        )
        if is_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)

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
        f"{name} ({'ready' if runtime_venvs.is_ready(name, wanted) else 'missing'})"
        for name, wanted in runtime_venvs.wanted_venvs().items()
    )
    return [
        f"amp-clipfix runtime tests: {found} ({sys.executable})",
        f"release venvs (.venvs/, {VENV_SCRIPT}): {releases or 'none'}",
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
            "(or `pip install -e '.[test]'`).",
            pytrace=False,
        )
