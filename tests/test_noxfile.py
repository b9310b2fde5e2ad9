"""noxfile.py: one session per release a runtime fixture names, in the folder the tests look in."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nox
import pytest
from nox.sessions import _normalize_path
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import noxfile

RUNTIME_CASES = Path(noxfile.CASES)


def test_every_release_a_fixture_names_is_a_session_tagged_releases() -> None:
    named = {
        tuple(data["runtime"])
        for spec in RUNTIME_CASES.glob("*/case.json")
        if (data := json.loads(spec.read_text(encoding="utf-8"))).get("runtime")
    }
    assert named, "the runtime fixtures name no release besides the test interpreter's"
    sessions = nox.registry.get()
    for requirements in named:
        name = noxfile.session_name(list(requirements))
        assert noxfile.TAG in sessions[name].tags, name
        assert set(requirements) <= set(noxfile.releases()[name]), name


def test_a_new_release_is_a_fixture_folder(tmp_path: Path) -> None:
    for case, runtime in [
        ("fabric_2_2", ["lightning_fabric==2.2.5"]),
        ("trainer_1_9", ["pytorch-lightning==1.9.5"]),
        ("manual_1_9", ["pytorch-lightning==1.9.5", "setuptools<81"]),
        ("current", None),
    ]:
        (tmp_path / case).mkdir()
        (tmp_path / case / "case.json").write_text(json.dumps({"runtime": runtime}))
    assert noxfile.releases(tmp_path) == {
        "release-lightning-fabric-2-2-5": ["lightning_fabric==2.2.5"],
        "release-pytorch-lightning-1-9-5": ["pytorch-lightning==1.9.5", "setuptools<81"],
    }


def test_the_tests_look_where_nox_makes_the_environment() -> None:
    for name, requirements in noxfile.releases().items():
        folder = _normalize_path(str(noxfile.ENVDIR), name)
        assert noxfile.python_of(requirements) == Path(folder) / "bin" / "python"


def test_a_release_must_be_an_exact_pin() -> None:
    with pytest.raises(ValueError, match="exact pin"):
        noxfile.session_name(["lightning>=2.4"])


def test_the_readme_test_command_installs_makes_the_releases_and_runs_everything() -> None:
    """The second command block of README.md is the one .ci/run runs as written."""
    readme = (Path(noxfile.ROOT) / "README.md").read_text(encoding="utf-8")
    command = re.findall(r"^```bash\n(.*?)^```$", readme, re.MULTILINE | re.DOTALL)[1]
    steps = [step.strip() for step in command.strip().split("&&")]
    assert steps[2] == "pip install -U pip", command  # pip 25.1+ reads dependency groups
    assert steps[3] == "pip install -e . --group test", command
    assert steps[4] == f"nox -t {noxfile.TAG}", command
    assert steps[5].startswith("python -m pytest -n auto"), command
    assert steps[5].endswith('-m "runtime or not runtime"'), command
    assert "readme_block 2" in (Path(noxfile.ROOT) / ".ci" / "run").read_text(encoding="utf-8")


def test_the_test_group_holds_what_the_release_environments_need() -> None:
    """nox makes them with uv (one torch on disk, hard-linked from uv's cache), so the group
    that the README's command installs brings nox and uv."""
    pyproject = tomllib.loads((Path(noxfile.ROOT) / "pyproject.toml").read_text(encoding="utf-8"))
    group = [Requirement(line).name for line in pyproject["dependency-groups"]["test"]]
    assert {"nox", "uv", "torch"} <= set(group)
    assert "optional-dependencies" not in pyproject["project"]  # no public `test` extra
    assert nox.options.default_venv_backend == "uv"
    for name in noxfile.releases():
        assert nox.registry.get()[name].venv_backend == "uv", name


def test_uv_is_told_where_pip_is_told_packages_come_from() -> None:
    """uv does not read pip's settings: the sessions hand it pip's variables (a wheel folder,
    an index), and leave alone a uv variable that is already set."""
    environ = {
        "PIP_FIND_LINKS": "/opt/wheels /srv/more",
        "PIP_INDEX_URL": "file:///srv/simple",
        "PIP_EXTRA_INDEX_URL": " ",
        "UV_INDEX": "file:///mine",
    }
    assert noxfile.uv_env(environ) == {
        "UV_FIND_LINKS": "/opt/wheels /srv/more",
        "UV_DEFAULT_INDEX": "file:///srv/simple",
    }
    assert noxfile.uv_env({}) == {}


def test_find_links_come_from_pips_configuration_when_the_environment_has_none() -> None:
    """uv reads no pip.conf: the CPU torch wheel's folder must reach it through UV_FIND_LINKS."""
    assert noxfile.with_find_links({}, lambda: "/opt/wheels") == {"PIP_FIND_LINKS": "/opt/wheels"}
    assert noxfile.uv_env(noxfile.with_find_links({}, lambda: "/w")) == {"UV_FIND_LINKS": "/w"}
    kept = {"PIP_FIND_LINKS": "/mine"}
    assert noxfile.with_find_links(kept, lambda: "/opt/wheels") == kept
    assert noxfile.with_find_links({}, lambda: "") == {}


class RecordedSession:
    """What a release session asks of nox, without running it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def install(self, *arguments: str, env: dict[str, str]) -> None:
        self.calls.append(("install", arguments))

    def run(self, *arguments: str, **options: object) -> str:
        self.calls.append(("run", arguments))
        return "/env/lib/python3.11/site-packages\n"


def test_a_release_environment_is_compiled_after_its_installs() -> None:
    """uv installs no bytecode and the runtime programs run with PYTHONDONTWRITEBYTECODE=1: the
    session compiles the environment's site-packages itself, after every install, each time it
    runs (a reused environment made before it too)."""
    for name in noxfile.releases():
        session = RecordedSession()
        nox.registry.get()[name].func(session)
        kinds = [kind for kind, _ in session.calls]
        assert kinds[:2] == ["install", "install"], session.calls
        compiled = session.calls[-1][1]
        assert kinds[-1] == "run" and compiled[:3] == ("python", "-m", "compileall"), compiled
        assert compiled[-1] == "/env/lib/python3.11/site-packages", compiled
