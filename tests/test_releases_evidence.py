"""Releases from evidence (issue 36): pins written as install commands (Dockerfiles, CI
workflows, tox.ini, noxfile.py), code that runs on one Lightning line only, and a release that is
only assumed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_pins import project

from amp_clipfix.cli import main
from amp_clipfix.project import evidence, pins
from amp_clipfix.project.pins import is_pin_file, resolve_target, resolve_torch


@pytest.fixture(autouse=True)
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As in a pre-commit or pipx environment: no Lightning, no torch next to amp-clipfix."""
    monkeypatch.setattr(pins, "installed_version", lambda package: None)
    monkeypatch.chdir(tmp_path)


def assumed(root: Path, files: tuple[Path, ...] = ()) -> str:
    resolution = resolve_target(root, None, files)
    return resolution.target.describe()


DOCKERFILE = """\
FROM python:3.9-slim
# RUN pip install lightning==2.6.6  (a comment names no pin)
RUN apt-get update && pip install --no-cache-dir -U pip && \\
    pip install --no-cache-dir \\
        -i https://example.invalid/simple \\
        "pytorch-lightning[extra]==1.8.6" torchvision
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"Dockerfile": DOCKERFILE}, "pytorch-lightning 1.8.6 from Dockerfile"),
        (
            {"docker/train.Dockerfile": "RUN python -m pip install lightning==2.0.9\n"},
            "lightning 2.0.9 from docker/train.Dockerfile",
        ),
        (
            {
                "Dockerfile": "COPY . .\nRUN pip install -r requirements/docker.txt\n",
                "requirements/docker.txt": "pytorch-lightning==1.9.5\n",
            },
            "pytorch-lightning 1.9.5 from requirements/docker.txt",
        ),
        (
            {
                ".github/workflows/ci.yml": (
                    "jobs:\n  t:\n    steps:\n      - run: |\n"
                    "          uv pip install 'lightning>=2.2,<2.3' pytest\n"
                )
            },
            "lightning>=2.2,<2.3 from .github/workflows/ci.yml",
        ),
        (
            {
                "tox.ini": "[tox]\nenvlist = py310\n[testenv:gpu]\ndeps =\n    pytest\n"
                "    py310,py311: pytorch-lightning==1.9.5\n"
            },
            "pytorch-lightning 1.9.5 from tox.ini",
        ),
        (
            {
                "noxfile.py": "import nox\n\n@nox.session\ndef t(session):\n"
                "    session.run('pip', 'install', 'lightning==2.4.0')\n"
            },
            "lightning 2.4.0 from noxfile.py",
        ),
    ],
    ids=["dockerfile", "docker-folder", "dockerfile-include", "workflow", "tox", "noxfile"],
)
def test_install_commands_are_pins(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    root = project(tmp_path, files)
    assert assumed(root) == expected
    assert resolve_target(root).warnings == ()


def test_test_environments_are_second_tier_and_variables_are_no_pin(tmp_path: Path) -> None:
    """What the project installs (pyproject) decides before what CI tests with; a version
    written as a CI or shell variable is decided elsewhere: no pin, no warning."""
    root = project(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["lightning>=2.4,<2.5"]\n',
            "tox.ini": "[testenv]\ndeps = pytorch-lightning==1.9.5\n",
        },
    )
    assert assumed(root) == "lightning>=2.4,<2.5 from pyproject.toml"
    (root / "pyproject.toml").unlink()
    (root / "tox.ini").unlink()
    project(
        root,
        {
            ".github/workflows/ci.yml": "- run: pip install lightning==${{ matrix.pl }}\n",
            "Dockerfile": "ARG PL\nRUN pip install pytorch-lightning==$PL\n",
        },
    )
    resolution = resolve_target(root)
    assert resolution.target.assumed and resolution.warnings == ()


def test_a_dockerfile_or_workflow_is_a_pin_file() -> None:
    assert is_pin_file(Path("Dockerfile")) and is_pin_file(Path("docker/gpu.Dockerfile"))
    assert is_pin_file(Path(".github/workflows/tests.yml")) and is_pin_file(Path("tox.ini"))
    assert is_pin_file(Path("noxfile.py")) and not is_pin_file(Path("configs/train.yml"))


def write_code(root: Path, files: dict[str, str]) -> tuple[Path, ...]:
    project(root, files)
    return tuple(root / name for name in files)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "import pytorch_lightning as pl\nclass M(pl.LightningModule):\n"
            "    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx,\n"
            "                       optimizer_closure): ...\n",
            "pytorch-lightning 1.x from code evidence: `optimizer_idx` in optimizer_step at m.py:3",
        ),
        (
            "import pytorch_lightning as pl\nlogger = pl.loggers.LoggerCollection([])\n",
            "pytorch-lightning 1.x from code evidence: `LoggerCollection` at m.py:2",
        ),
        (
            "from pytorch_lightning.lite import LightningLite\n",
            "pytorch-lightning 1.x from code evidence: `pytorch_lightning.lite` at m.py:1",
        ),
        (
            "import lightning as L\nL.Trainer(precision='16-mixed')\n",
            'Lightning 2.x from code evidence: `precision="16-mixed"` at m.py:2',
        ),
        ("import lightning as L\nL.Trainer(precision=16)\n", None),  # both lines run it
        ("def training_step(self, batch, batch_idx, optimizer_idx): ...\n", None),  # no Lightning
    ],
    ids=["optimizer_idx", "LoggerCollection", "lite", "16-mixed", "neutral", "not-lightning"],
)
def test_code_evidence_narrows_the_line(tmp_path: Path, code: str, expected: str | None) -> None:
    files = write_code(tmp_path, {"m.py": code})
    target = resolve_target(tmp_path, None, files).target
    if expected is None:
        assert target.assumed
    else:
        assert target.describe() == expected and not target.assumed
        assert all(
            release.is_1x != expected.startswith("Lightning 2") for release in target.releases
        )


def test_a_pin_and_an_installed_lightning_beat_code_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evidence is asked only when nothing else decides: the code is not even read then."""
    files = write_code(
        tmp_path, {"m.py": "from pytorch_lightning.loggers import LoggerCollection\n"}
    )
    assert assumed(tmp_path, files).startswith("pytorch-lightning 1.x from code evidence")
    project(tmp_path, {"requirements.txt": "pytorch-lightning==1.7.7\n"})
    assert assumed(tmp_path, files) == "pytorch-lightning 1.7.7 from requirements.txt"
    (tmp_path / "requirements.txt").unlink()
    monkeypatch.setattr(pins, "installed_version", {"lightning": "2.6.6"}.get)
    monkeypatch.setattr(evidence, "code_evidence", lambda files, root: pytest.fail("read"))
    assert assumed(tmp_path, files) == "lightning 2.6.6 from installed distribution"


def test_code_of_both_lines_is_no_evidence(tmp_path: Path) -> None:
    files = write_code(
        tmp_path,
        {
            "a.py": "import pytorch_lightning as pl\nclass M(pl.LightningModule):\n"
            "    def validation_epoch_end(self, outputs): ...\n",
            "b.py": "import lightning as L\nL.Fabric(precision='bf16-mixed')\n",
        },
    )
    resolution = resolve_target(tmp_path, None, files)
    assert resolution.target.assumed
    assert resolution.warnings == (
        "the code holds pytorch-lightning 1.x-only (`validation_epoch_end` at a.py:3) and "
        'Lightning 2.x-only (`precision="bf16-mixed"` at b.py:2) code; not used for the '
        "Lightning version",
    )


def test_an_assumed_release_and_torch_are_said_and_leave_migrations_for_review(
    tmp_path: Path,
) -> None:
    project(
        tmp_path,
        {
            "train.py": "import lightning as L\nimport torch\n\n"
            "scaler = torch.cuda.amp.GradScaler()\n"
            "trainer = L.Trainer(precision='bf16')\n"
        },
    )
    assert resolve_torch(tmp_path).target.assumed
    applied = CliRunner().invoke(main, ["apply", "--yes", "."])
    assert applied.exit_code == 1, applied.output
    assert (tmp_path / "train.py").read_text().endswith("L.Trainer(precision='bf16')\n")
    result = CliRunner().invoke(main, ["check", "."])
    assert "review: no rewrite: no pin names the Lightning release (2.6.6 is only assumed)" in (
        result.stdout
    )
    assert "review: no rewrite: no pin names the torch release (2.13.0 is only assumed)" in (
        result.stdout
    )
    assert result.stdout.splitlines()[-1].endswith(
        "assumed Lightning 2.6.6: no pin found (the latest release), torch 2.13.0: no pin found "
        "(the newest torch known)."
    )
    pinned = CliRunner().invoke(
        main, ["apply", "--yes", "--lightning-version", "2.6.6", "--torch-version", "2.4", "."]
    )
    assert pinned.exit_code == 0, pinned.output
    assert "precision='bf16-mixed'" in (tmp_path / "train.py").read_text()
    assert "torch.amp.GradScaler(" in (tmp_path / "train.py").read_text()
