"""The Lightning releases the runtime proof runs on, one nox session (and virtual environment) each.

A runtime fixture names the release its program runs on in its case.json:
`"runtime": ["pytorch-lightning==1.9.5", "setuptools>=77.0.3,<81"]` (requirement lines, the
Lightning pin first); cases without it run on the interpreter that runs the tests. Those lists are
the only record of which releases the tests need: every release among them is a session here,
`release-<name>-<version>`, tagged `releases`, whose environment nox keeps in
`.nox/release-<name>-<version>/` (its default place) and reuses on the next run.

    nox -t releases      # create or update every release environment, one per core at a time
                         # (a second run only asks pip and checks the bytecode)
    nox -l               # list them

torch==2.13.0 (a CPU wheel) is installed first and pinned again beside the release, so that
Lightning never resolves another torch (any other torch request pulls a multi-GB CUDA build).
The environments are made and filled by uv (`venv_backend="uv"`; uv is in the `test` dependency
group): uv hard-links every installed file from its cache, so the releases share one torch on
disk (about 0.9 GB for all of them instead of 1 GB each). uv does not read pip's settings: where
pip is told by its environment variables where the wheels are (`PIP_FIND_LINKS`,
`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`), the sessions pass the same places to uv.
`tests/runtime/` runs each case's program with `python_of(...)` of its list and fails when that
environment is missing or holds other versions.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
CASES = ROOT / "fixtures" / "runtime"
ENVDIR = ROOT / ".nox"  # nox's default --envdir
TORCH = "torch==2.13.0"
TAG = "releases"

nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.parallel = "auto"  # the releases install side by side, one per core


def session_name(requirements: list[str]) -> str:
    """`["lightning==2.0.9.post0", ...]` -> `release-lightning-2-0-9-post0`: the first line
    names it, spelled so that nox uses it unchanged as the folder name."""
    name, _, version = requirements[0].partition("==")
    if not version.strip() or not name.strip():
        raise ValueError(f"the first runtime requirement must be an exact pin: {requirements[0]!r}")
    return "release-" + re.sub(r"[^a-z0-9]+", "-", f"{name}-{version}".lower()).strip("-")


def releases(cases: Path = CASES) -> dict[str, list[str]]:
    """{session name: requirements}, merged over every case that names the same release."""
    wanted: dict[str, list[str]] = {}
    for spec in sorted(cases.glob("*/case.json")):
        requirements = json.loads(spec.read_text(encoding="utf-8")).get("runtime")
        if not requirements:
            continue
        merged = wanted.setdefault(session_name(requirements), [])
        merged.extend(line for line in requirements if line not in merged)
    return wanted


def python_of(requirements: list[str]) -> Path:
    """The interpreter of the environment that `nox -t releases` makes for this release."""
    return ENVDIR / session_name(requirements) / "bin" / "python"


# pip's settings that say where packages come from, and the uv settings that say the same.
PIP_TO_UV = {
    "PIP_FIND_LINKS": "UV_FIND_LINKS",
    "PIP_INDEX_URL": "UV_DEFAULT_INDEX",
    "PIP_EXTRA_INDEX_URL": "UV_INDEX",
}


def uv_env(environ: dict[str, str]) -> dict[str, str]:
    """The uv variables for the pip variables set in `environ` (a uv one already set wins).
    Both take several places separated by spaces."""
    return {
        uv: environ[pip]
        for pip, uv in PIP_TO_UV.items()
        if environ.get(pip, "").strip() and uv not in environ
    }


def configured_find_links() -> str:
    """pip's `find-links` from its configuration files (where this machine's CPU torch wheel
    lies when no PIP_FIND_LINKS is set): uv reads neither pip's files nor its constraints."""
    asked = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        capture_output=True,
        text=True,
        check=False,
    )
    return asked.stdout.strip() if asked.returncode == 0 else ""


def with_find_links(environ: dict[str, str], configured: Callable[[], str]) -> dict[str, str]:
    """`environ` with PIP_FIND_LINKS from pip's configuration when the environment has none."""
    if environ.get("PIP_FIND_LINKS", "").strip():
        return environ
    links = configured()
    return {**environ, "PIP_FIND_LINKS": links} if links else environ


def compile_bytecode(session: nox.Session) -> None:
    """Compile the environment's modules once, here: uv installs no bytecode, and the runtime
    tests run every program with PYTHONDONTWRITEBYTECODE=1, so each interpreter of a release
    compiled torch and Lightning from source again (about 19 s of CPU instead of 8 to import
    them). Up-to-date files are skipped, so a reused environment pays a listing; a module that
    does not compile on this Python (torch ships a 3.12-syntax test helper) stays as it was."""
    site_packages = session.run(
        "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", silent=True
    )
    assert isinstance(site_packages, str)
    # one process: the sessions already run side by side, and a pool's hand-offs cost a reused
    # environment's check 9 s of CPU instead of 1
    compile_all = ("python", "-m", "compileall", "-q", "-q", site_packages.strip())
    session.run(*compile_all, success_codes=[0, 1])  # 1: some file did not compile


def release_session(requirements: list[str]) -> nox.registry.Func:
    def install(session: nox.Session) -> None:
        env = uv_env(with_find_links(dict(os.environ), configured_find_links))
        session.install(TORCH, env=env)  # first, so that Lightning never resolves another torch
        session.install(TORCH, *requirements, env=env)
        compile_bytecode(session)

    install.__doc__ = " ".join(requirements)
    return nox.session(
        name=session_name(requirements),
        tags=[TAG],
        venv_backend="uv",
        reuse_venv=True,
        allow_parallel=True,
    )(install)


for _requirements in releases().values():
    release_session(_requirements)
