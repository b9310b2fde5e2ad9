"""Shared set-up for the runtime tests, which run real torch and Lightning on the CPU."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys

import pytest

REQUIRED = {"torch": "2.13.0", "lightning": "2.6.6"}


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None when it is missing."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pytest_report_header() -> list[str]:
    """Say which torch and Lightning the runtime facts were checked against."""
    found = ", ".join(f"{name} {installed_version(name)}" for name in REQUIRED)
    return [f"amp-clipfix runtime tests: {found} ({sys.executable})"]


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
