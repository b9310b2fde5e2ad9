"""Reading each project's Lightning pin: every source, their order, bad files, the report."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amp_clipfix.cli import main
from amp_clipfix.project import install_readers, pin_files, pin_readers, pins
from amp_clipfix.project.pin_readers import poetry_specifier
from amp_clipfix.project.pins import resolve_target
from amp_clipfix.project.version import Target

REAL_INSTALLED_TARGET = pins.installed_target
ALL_READERS = {**pin_readers.READERS, **install_readers.READERS}


@pytest.fixture(autouse=True)
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Pins must not depend on the Lightning installed next to the tests; paths are shown
    relative to the project, as when amp-clipfix runs inside it."""
    monkeypatch.setattr(pins, "installed_target", lambda: None)
    monkeypatch.chdir(tmp_path)


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def assumed(root: Path) -> str:
    resolution = resolve_target(root)
    return resolution.target.describe()


def lock(name: str, version: str) -> str:
    return f'version = 1\n\n[[package]]\nname = "{name}"\nversion = "{version}"\n'


SOURCES = {
    "uv.lock": ({"uv.lock": lock("lightning", "2.0.9.post0")}, "lightning 2.0.9.post0"),
    "poetry.lock": ({"poetry.lock": lock("pytorch-lightning", "1.8.0")}, "pytorch-lightning 1.8.0"),
    "pdm.lock": ({"pdm.lock": lock("lightning_fabric", "2.4.0")}, "lightning-fabric 2.4.0"),
    "Pipfile.lock": (
        {"Pipfile.lock": json.dumps({"default": {"lightning-fabric": {"version": "==1.9.4"}}})},
        "lightning-fabric 1.9.4",
    ),
    "requirements exact": (
        {"requirements.txt": "torch==2.13.0 \\\n    --hash=sha256:00\npytorch_lightning==1.9.5\n"},
        "pytorch-lightning 1.9.5",
    ),
    "requirements folder": (
        {
            "requirements/base.txt": "-r extra.txt\n-e .\n"
            "lightning[extra]>=2.0,<3 ; python_version>'3'\n"
        },
        "lightning>=2.0,<3",
    ),
    "pyproject project": (
        {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["lightning~=2.4.0"]\n'},
        "lightning~=2.4.0",
    ),
    "pyproject optional": (
        {"pyproject.toml": '[project.optional-dependencies]\ntrain = ["lightning==2.2.5"]\n'},
        "lightning 2.2.5",
    ),
    "pyproject dependency group": (
        {"pyproject.toml": '[dependency-groups]\ndev = ["pytorch-lightning==1.8.6"]\n'},
        "pytorch-lightning 1.8.6",
    ),
    "poetry caret": (
        {"pyproject.toml": '[tool.poetry.dependencies]\npytorch-lightning = "^1.9"\n'},
        "pytorch-lightning ^1.9",
    ),
    "poetry table list": (
        {
            "pyproject.toml": "[tool.poetry.dependencies]\n"
            'lightning = [{version = "2.4.0", python = ">=3.9"}]\n'
        },
        "lightning 2.4.0",
    ),
    "setup.cfg": (
        {"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    pytorch-lightning==1.9.5\n"},
        "pytorch-lightning 1.9.5",
    ),
    "setup.cfg extras": (
        {"setup.cfg": "[options.extras_require]\ntrain = lightning>=2.1,<2.2\n"},
        "lightning>=2.1,<2.2",
    ),
    "setup.py name": (
        {
            "setup.py": "from setuptools import setup\nBASE = ['torch']\n"
            "REQS = BASE + ['pytorch-lightning==1.9.5']\nsetup(install_requires=REQS)\n"
        },
        "pytorch-lightning 1.9.5",
    ),
    "setup.py extras": (
        {
            "setup.py": "import setuptools\n"
            "setuptools.setup(extras_require={'pl': ['lightning==2.3.3']})\n"
        },
        "lightning 2.3.3",
    ),
    "environment.yml pip": (
        {"environment.yml": "dependencies:\n  - python=3.11\n  - pip:\n    - lightning==2.2.5\n"},
        "lightning 2.2.5",
    ),
    "environment.yaml conda": (
        {"environment.yaml": "dependencies:\n  - conda-forge::pytorch-lightning=1.9\n"},
        "pytorch-lightning=1.9",
    ),
}


@pytest.mark.parametrize("source", SOURCES)
def test_each_source(tmp_path: Path, source: str) -> None:
    files, pin = SOURCES[source]
    root = project(tmp_path, files)
    resolution = resolve_target(root)
    assert resolution.warnings == ()
    assert resolution.target.pin == pin
    assert resolution.target.source.endswith(next(iter(files)))


def test_setup_py_is_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    root = project(
        tmp_path,
        {
            "setup.py": f"open({str(marker)!r}, 'w').close()\n"
            "from setuptools import setup\nsetup(install_requires=['pytorch-lightning==1.8.0'])\n"
        },
    )
    assert resolve_target(root).target.pin == "pytorch-lightning 1.8.0"
    assert not marker.exists()


def test_order_config_then_locks_then_declared_then_default(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "pyproject.toml": '[project]\ndependencies = ["lightning>=2.0"]\n',
            "requirements.txt": "lightning==2.4.0\nlightning-fabric>=2\n",
            "uv.lock": lock("lightning", "2.2.5"),
        },
    )
    assert assumed(root) == "lightning 2.2.5 from uv.lock"
    (root / "uv.lock").unlink()
    assert assumed(root) == "lightning 2.4.0 from requirements.txt"  # `==` is a lock
    (root / "requirements.txt").write_text("lightning>=2.4,<2.5\n")
    assert assumed(root) == "lightning>=2.0 from pyproject.toml"  # declared before ranges
    (root / "pyproject.toml").write_text('[tool.amp-clipfix]\nlightning-version = "1.9.5"\n')
    assert assumed(root) == "Lightning 1.9.5 from pyproject.toml [tool.amp-clipfix]"
    (root / "pyproject.toml").unlink()
    assert assumed(root) == "lightning>=2.4,<2.5 from requirements.txt"
    (root / "requirements.txt").unlink()
    assert assumed(root) == "Lightning 2.6.6: no pin found (the latest release)"


def test_the_command_line_wins(tmp_path: Path) -> None:
    root = project(tmp_path, {"uv.lock": lock("lightning", "2.2.5")})
    requested = Target.exact(pins.parse_version("1.9.5"), "--lightning-version")
    assert resolve_target(root, requested).target is requested


def test_installed_distribution_before_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site-packages"
    metadata = site / "pytorch_lightning-1.9.5.dist-info" / "METADATA"
    metadata.parent.mkdir(parents=True)
    metadata.write_text("Metadata-Version: 2.1\nName: pytorch-lightning\nVersion: 1.9.5\n\nText\n")
    (site / "Lightning_Fabric.egg-info").write_text("Name: lightning-fabric\nVersion: 2.0.0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(site)])
    target = REAL_INSTALLED_TARGET()
    assert target is not None and target.describe() == (
        "pytorch-lightning 1.9.5 from installed distribution"
    )
    assert pins.installed_version("lightning-fabric") == "2.0.0"
    assert pins.installed_version("lightning") is None


def test_installed_versions_are_those_importlib_metadata_finds() -> None:
    for package in ("lightning", "pytorch-lightning", "lightning-fabric", "click", "pyyaml"):
        try:
            expected: str | None = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert pins.installed_version(package) == expected, package


def test_lightning_first_within_one_file(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"requirements.txt": "lightning-fabric==2.0.0\npytorch-lightning==1.9.5\n"}
    )
    assert resolve_target(root).target.pin == "pytorch-lightning 1.9.5"


BAD_FILES = {
    "uv.lock": "version = 1\n[[package]\n",
    "pyproject.toml": "[project\n",
    "setup.py": "setup(install_requires=[\n",
    "setup.cfg": "[options\ninstall_requires = x\n",
    "Pipfile.lock": "{not json",
    "environment.yml": "dependencies: [\n",
    "requirements.txt": "lightning=2.0\n",
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_pin_file_warns_and_the_next_source_is_read(tmp_path: Path, name: str) -> None:
    """Each fallback is a source read after the bad file: a lock, a range, or the default."""
    fallbacks = {
        "requirements.txt": {"requirements/lock.txt": "pytorch-lightning==1.8.0\n"},
        "environment.yml": {},  # read last: the default follows
        "uv.lock": {"requirements.txt": "pytorch-lightning==1.8.0\n"},
        "Pipfile.lock": {"requirements.txt": "pytorch-lightning==1.8.0\n"},
    }
    root = project(tmp_path, {name: BAD_FILES[name]})
    project(root, fallbacks.get(name, {"requirements.txt": "pytorch-lightning>=1.8,<1.8.1\n"}))
    resolution = resolve_target(root)
    expected = (2, 6, 6) if name == "environment.yml" else (1, 8, 0)
    assert resolution.target.releases[0].version.release == expected
    assert len(resolution.warnings) == 1, resolution.warnings
    warning = resolution.warnings[0]
    assert name in warning and "\n" not in warning


def test_a_range_no_known_release_meets_warns(tmp_path: Path) -> None:
    root = project(tmp_path, {"requirements.txt": "lightning>=3.1\n"})
    resolution = resolve_target(root)
    assert resolution.target.source == "no pin found (the latest release)"
    assert "no known Lightning release matches lightning>=3.1" in resolution.warnings[0]


def test_a_non_utf8_requirements_file_warns(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_bytes(b"lightning==2.0.0 # caf\xe9\n")
    resolution = resolve_target(tmp_path)
    assert "requirements.txt: not UTF-8 text" in resolution.warnings[0]


@pytest.mark.parametrize(
    ("poetry", "pep440"),
    [
        ("^1.9.5", ">=1.9.5,<2"),
        ("^0.2", ">=0.2,<0.3"),
        ("~2.0.3", ">=2.0.3,<2.1"),
        ("~2", ">=2,<3"),
        ("2.4.0", "==2.4.0"),
        (">=2.0,<3", ">=2.0,<3"),
        (">=2.0 <3", ">=2.0,<3"),
        ("*", ">=0"),
    ],
)
def test_poetry_constraints(poetry: str, pep440: str) -> None:
    assert poetry_specifier(poetry) == pep440


FABRIC_16 = (
    'import lightning as L\nimport torch\n\nfabric = L.Fabric(precision="16-mixed")\n'
    "opt = torch.optim.AdamW([], fused=True)\nfabric.clip_gradients(None, opt, max_norm=1.0)\n"
)


@pytest.fixture
def two_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project(tmp_path / "old", {"setup.py": "import setuptools\n", "train.py": FABRIC_16})
    (tmp_path / "old" / "requirements.txt").write_text("lightning-fabric==1.9.4\n")
    project(tmp_path / "new", {"pyproject.toml": "", "train.py": FABRIC_16})
    (tmp_path / "new" / "uv.lock").write_text(lock("lightning", "2.4.0"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_names_each_projects_release(two_projects: Path) -> None:
    result = CliRunner().invoke(main, ["check", "old", "new"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    reported = [line.split(" ", 2)[:2] for line in lines if ": ACF" in line]
    # at the clip call auto's unscale changes; that fp16 clip by norm is also ACF007's on 2.4.0
    # (on 1.9.4 Fabric has no clip_gradients: nothing in old/)
    assert reported == [["new/train.py:6:1:", "ACF001"], ["new/train.py:6:1:", "ACF007"]]
    assert "project new: assumed lightning 2.4.0 from new/uv.lock" in lines
    assert "project old: assumed lightning-fabric 1.9.4 from old/requirements.txt" in lines
    assert lines[-1].endswith("; assumed 2 Lightning releases in 2 projects (listed above).")


def test_json_and_sarif_name_the_pin(two_projects: Path) -> None:
    document = json.loads(
        CliRunner().invoke(main, ["check", "--format", "json", "old", "new"]).output
    )
    assert document["summary"]["lightning_version"] == "1.9.4, 2.4.0"
    assert [p["assumed"] for p in document["summary"]["projects"]] == [
        "lightning 2.4.0 from new/uv.lock",
        "lightning-fabric 1.9.4 from old/requirements.txt",
    ]
    assert document["summary"]["projects"][0]["releases"] == ["2.4.0"]
    assert document["findings"][0]["assumed_lightning"] == "lightning 2.4.0 from new/uv.lock"
    sarif = json.loads(
        CliRunner().invoke(main, ["check", "--format", "sarif", "old", "new"]).output
    )
    run = sarif["runs"][0]
    assert run["results"][0]["properties"] == {
        "confidence": "high",
        "assumed_lightning": "lightning 2.4.0 from new/uv.lock",
    }
    assert len(run["properties"]["projects"]) == 2


def test_a_bad_pin_file_is_a_warning_not_an_error(two_projects: Path) -> None:
    (two_projects / "new" / "uv.lock").write_text("[[package]\n")
    result = CliRunner().invoke(main, ["check", "new"])
    assert result.exit_code == 1  # the finding; the broken lock does not make it exit 2
    assert "warning: new/uv.lock: invalid TOML:" in result.output


def test_only_lines_naming_a_lightning_package_are_read_or_warned_about(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "requirements.txt": (
                "lightning-utilities>=0.10 ; bad marker ((\n"  # another package: no warning
                "-r base.txt\n"
                "Lightning_Fabric == 2.4.0\n"
            )
        },
    )
    resolution = resolve_target(root)
    assert resolution.target.pin == "lightning-fabric 2.4.0"
    assert resolution.warnings == ()


# --- Nothing is read through a link out of the project (issue 28) ----------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_a_pin_file_linked_out_of_the_project_is_never_read(tmp_path: Path, source: str) -> None:
    files, _ = SOURCES[source]
    outside = project(tmp_path / "outside", files)
    root = tmp_path / "project"
    root.mkdir()
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(outside / name)
    resolution = resolve_target(root)
    assert resolution.target.source == "no pin found (the latest release)"
    name = next(iter(files))
    assert resolution.warnings == (
        f"project/{name}: a link leads outside the project; not read; "
        "not used for the Lightning version",
    )


def test_a_pin_file_linked_inside_the_project_is_read(tmp_path: Path) -> None:
    root = project(tmp_path, {"deps/pinned.txt": "lightning==2.4.0\n"})
    (root / "requirements.txt").symlink_to(root / "deps" / "pinned.txt")
    assert assumed(root) == "lightning 2.4.0 from requirements.txt"


# --- Every reader of a pin file survives any content (issue 28) -------------------------------

DEEP = 20_000
NESTED = "[" * DEEP + "]" * DEEP
DEEP_FILES = {
    "pyproject.toml": f'[project]\ndependencies = ["lightning==2.4.0"]\nx = {NESTED}\n',
    "uv.lock": f"{lock('lightning', '2.4.0')}x = {NESTED}\n",
    "Pipfile.lock": '{"default": {"lightning": {"version": "==2.4.0"}}, "x": ' + NESTED + "}",
    "environment.yml": f"dependencies:\n  - lightning=2.4.0\nx: {NESTED}\n",
}


@pytest.mark.parametrize("name", DEEP_FILES)
def test_a_deeply_nested_pin_file_is_one_warning(tmp_path: Path, name: str) -> None:
    root = project(tmp_path, {name: DEEP_FILES[name]})
    resolution = resolve_target(root)
    assert resolution.target.source == "no pin found (the latest release)"
    (warning,) = resolution.warnings
    assert warning.startswith(f"{name}: ") and "nested too deeply" in warning, warning


@pytest.mark.parametrize("name", ["uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock"])
def test_a_lock_that_is_not_utf8_is_one_warning(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b'# caf\xe9\n[[package]]\nname = "lightning"\n')
    (tmp_path / "requirements.txt").write_text("pytorch-lightning==1.9.5\n")
    resolution = resolve_target(tmp_path)
    assert resolution.target.describe() == "pytorch-lightning 1.9.5 from requirements.txt"
    assert resolution.warnings == (
        f"{name}: not UTF-8 text (byte 5); not used for the Lightning version",
    )


@pytest.mark.parametrize(
    "setup_py",
    [
        "REQS = ['torch']\nREQS = REQS + ['lightning==2.4.0']\nsetup(install_requires=REQS)\n",
        "REQS = ['torch']\nREQS += ['lightning==2.4.0']\nsetup(install_requires=REQS)\n",
        "EXTRAS = {'pl': ['lightning==2.4.0']}\nEXTRAS = {**EXTRAS, 'all': EXTRAS['pl']}\n"
        "setup(extras_require=EXTRAS)\n",
        "EXTRAS = {'pl': ['lightning==2.4.0'], 'all': EXTRAS}\nsetup(extras_require=EXTRAS)\n",
        "A = B\nB = A + ['lightning==2.4.0']\nsetup(install_requires=A)\n",
        "setup(install_requires=['lightning==2.4.0']" + " + []" * 2_000 + ")\n",
    ],
    ids=["self-plus", "augmented", "spread", "self-in-dict", "cycle", "long-chain"],
)
def test_setup_py_self_reference_and_long_chains_end(tmp_path: Path, setup_py: str) -> None:
    root = project(tmp_path, {"setup.py": "from setuptools import setup\n" + setup_py})
    resolution = resolve_target(root)
    assert resolution.warnings == ()
    assert resolution.target.describe() == "lightning 2.4.0 from setup.py"


def test_a_setup_py_too_deep_for_the_parser_is_one_warning(tmp_path: Path) -> None:
    chain = "setup(install_requires=['lightning==2.4.0']" + " + []" * 50_000 + ")\n"
    resolution = resolve_target(project(tmp_path, {"setup.py": chain}))
    assert resolution.target.source == "no pin found (the latest release)"
    assert resolution.warnings == (
        "setup.py: nested too deeply to read; not used for the Lightning version",
    )


def test_a_deeply_nested_project_is_a_warning_on_the_command_line(tmp_path: Path) -> None:
    project(tmp_path / "p", {"setup.py": "import setuptools\n", "train.py": FABRIC_16})
    (tmp_path / "p" / "uv.lock").write_text(DEEP_FILES["uv.lock"])
    result = CliRunner().invoke(main, ["check", "p"], catch_exceptions=False)
    assert result.exit_code == 1, result.output  # the finding (default release), no traceback
    assert "warning: p/uv.lock: nested too deeply to read; not used for the Lightning version" in (
        result.output.splitlines()
    )


FORMAT_ALPHABET = "[]{}()=\"',:;#\n\t -*!^~<>.0123456789abcdeilghtnprsvyk_&|+\\\x00\xe9"


@pytest.mark.parametrize("name", sorted(ALL_READERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300) | st.text(FORMAT_ALPHABET, max_size=300).map(str.encode))
def test_every_reader_survives_any_bytes(name: str, data: bytes) -> None:
    """Whatever a pin file holds, its reader gives pins or one line (PinError), never another
    exception; a message quotes the file short and escaped."""
    reader = ALL_READERS[name]
    for prefix in (b"", READER_PREFIXES.get(name, b"")):
        try:
            found = pin_files.parse_pins(reader, prefix + data, pins.LIGHTNING)
        except pins.PinError as error:
            message = str(error)
            assert "\n" not in message and len(message) < 400, message
            assert not any(ord(c) < 32 for c in message), message
        else:
            assert all(isinstance(pin, pins.Pin) for pin in found)


READER_PREFIXES = {  # a valid start, so that the bytes reach the reader's own code
    "pyproject.toml": b'[project]\ndependencies = ["lightning',
    "uv.lock": b'[[package]]\nname = "lightning"\nversion = "',
    "poetry.lock": b'[[package]]\nname = "lightning"\nversion = "',
    "pdm.lock": b'[[package]]\nname = "lightning"\nversion = "',
    "Pipfile.lock": b'{"default": {"lightning": {"version": "',
    "requirements.txt": b"lightning",
    "setup.cfg": b"[options]\ninstall_requires =\n    lightning",
    "setup.py": b"setup(install_requires=['lightning",
    "environment.yml": b"dependencies:\n  - lightning",
    "Dockerfile": b"RUN pip install lightning",
    "ci.yml": b"steps:\n  - run: pip install lightning",
    "tox.ini": b"[testenv]\ndeps =\n    lightning",
    "noxfile.py": b"session.install('lightning",
}


@pytest.mark.parametrize("name", sorted(ALL_READERS))
@pytest.mark.parametrize("depth", [100, 1_000, 100_000])
def test_every_reader_survives_any_nesting(name: str, depth: int) -> None:
    for opening, closing in ("[]", "{}", "()"):
        data = READER_PREFIXES[name] + (opening * depth + closing * depth).encode()
        try:
            pin_files.parse_pins(ALL_READERS[name], data, pins.LIGHTNING)
        except pins.PinError as error:
            assert "\n" not in str(error)


# --- The pin that decides is the one the project installs (issue 28) ---------------------------


@pytest.mark.parametrize(
    ("files", "decided"),
    [
        (
            {
                "requirements-docs.txt": "pytorch-lightning==1.6.0\n",
                "requirements.txt": "lightning==2.4.0\n",
            },
            "lightning 2.4.0 from requirements.txt",
        ),
        (
            {
                "requirements/docs.txt": "pytorch-lightning==1.6.0\n",
                "requirements/base.txt": "lightning>=2.4,<2.5\n",
            },
            "lightning>=2.4,<2.5 from requirements/base.txt",
        ),
        (
            {
                "requirements-test.txt": "lightning==1.9.5\n",
                "pyproject.toml": '[project]\ndependencies = ["lightning>=2.2,<2.3"]\n',
            },
            "lightning>=2.2,<2.3 from pyproject.toml",
        ),
        (
            {
                "pyproject.toml": '[project]\ndependencies = ["torch"]\n'
                '[project.optional-dependencies]\ndocs = ["pytorch-lightning==1.6.0"]\n'
                '[dependency-groups]\ndev = ["lightning==2.0.0"]\n',
                "setup.py": "from setuptools import setup\n"
                "setup(install_requires=['lightning~=2.4.0'])\n",
            },
            "lightning~=2.4.0 from setup.py",
        ),
        (
            {
                "pyproject.toml": '[tool.poetry.dependencies]\nlightning = "^2.1"\n'
                '[tool.poetry.group.docs.dependencies]\npytorch-lightning = "1.6.0"\n'
            },
            "lightning ^2.1 from pyproject.toml",
        ),
        (
            {
                "Pipfile.lock": json.dumps(
                    {
                        "default": {"lightning": {"version": "==2.4.0"}},
                        "develop": {"pytorch-lightning": {"version": "==1.6.0"}},
                    }
                )
            },
            "lightning 2.4.0 from Pipfile.lock",
        ),
        (
            {
                "requirements.txt": "-r requirements/pytorch/base.txt\n",
                "requirements/pytorch/base.txt": "lightning==2.2.5\n",
                "requirements/app.txt": "lightning==2.0.0\n",
            },
            "lightning 2.2.5 from requirements/pytorch/base.txt",
        ),
        (
            {
                "requirements-docs.txt": "pytorch-lightning==1.6.0\n",
                "setup.cfg": "[options.extras_require]\nall = lightning==2.0.0\n",
            },
            "pytorch-lightning 1.6.0 from requirements-docs.txt",  # second tier: exact first
        ),
    ],
    ids=[
        "docs-vs-requirements",
        "folder",
        "test-vs-pyproject",
        "extras-vs-setup",
        "poetry-groups",
        "pipfile-develop",
        "included",
        "second-tier-only",
    ],
)
def test_what_the_project_installs_decides(
    tmp_path: Path, files: dict[str, str], decided: str
) -> None:
    root = project(tmp_path, files)
    resolution = resolve_target(root)
    assert resolution.warnings == ()
    assert resolution.target.describe() == decided


def test_the_report_names_the_file_that_decided(tmp_path: Path) -> None:
    project(
        tmp_path / "p",
        {
            "setup.py": "import setuptools\n",
            "train.py": FABRIC_16,
            "requirements-docs.txt": "pytorch-lightning==1.6.0\n",
            "requirements.txt": "lightning==2.4.0\n",
        },
    )
    text = CliRunner().invoke(main, ["check", "p"])
    assert text.exit_code == 1, text.output  # 1.6.0 would have had no finding
    assert text.output.splitlines()[-1].endswith(
        "; assumed lightning 2.4.0 from p/requirements.txt."
    )
    document = json.loads(CliRunner().invoke(main, ["check", "--format", "json", "p"]).output)
    (summary,) = document["summary"]["projects"]
    assert summary["source"] == "p/requirements.txt"
    assert summary["assumed"] == "lightning 2.4.0 from p/requirements.txt"


def test_a_broken_docs_requirements_file_does_not_warn_when_an_install_pin_decides(
    tmp_path: Path,
) -> None:
    root = project(
        tmp_path,
        {
            "requirements-docs.txt": "pytorch-lightning=1.6.0\n",
            "pyproject.toml": '[project]\ndependencies = ["lightning>=2.2,<2.3"]\n',
        },
    )
    resolution = resolve_target(root)
    assert resolution.target.describe() == "lightning>=2.2,<2.3 from pyproject.toml"
    assert resolution.warnings == ()
