"""A run's two pin searches, the Lightning release's and torch's (pipeline.project_target), ask
the same files in the same order: they share one `ProjectFiles` (project/pin_files.py), so each
file is read (and its links resolved) once and setup.py parsed once, and each search answers
exactly as it does alone (its warnings and errors too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix import observed
from amp_clipfix.kinds import Strategy
from amp_clipfix.pipeline import Options, project_target
from amp_clipfix.project import pin_readers, pins
from amp_clipfix.project.pin_files import ProjectFiles

SETUP = """\
from setuptools import setup

BASE = ["numpy", "torch>=2.1,<2.3"]
setup(
    name="p",
    install_requires=BASE + ["lightning>=2.1,<2.3"],
    extras_require={"dev": ["pytest"]},
)
"""
FILES = {
    "requirements.txt": "-r requirements/base.txt\nrich\n",
    "requirements/base.txt": "numpy\n",
    "requirements/docs.txt": "sphinx\n",
    "setup.py": SETUP,
    "Dockerfile": "FROM python:3.11\nRUN pip install -r requirements/extra.txt\n",
    "requirements/extra.txt": "\xff not UTF-8 is fine here\n",
    "setup.cfg": "[options\ninstall_requires = torch\n",  # a warning in both searches
}


@pytest.fixture(autouse=True)
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Pins only (not the Lightning or torch installed next to the tests)."""
    monkeypatch.setattr(pins, "installed_target", lambda: None)
    monkeypatch.setattr(pins, "installed_version", lambda name: None)
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = observed.read_inside

    def read_inside(path: str | Path, folder: str | Path) -> bytes:
        reads.append(Path(path).name)
        return real(path, folder)

    monkeypatch.setattr(observed, "read_inside", read_inside)
    return reads


def counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parses: list[str] = []
    real = ast.parse

    def parse(source: object, filename: str = "<unknown>", *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        parses.append(filename)
        return real(source, filename, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", parse)
    pin_readers.setup_py_requirements.cache_clear()
    return parses


def test_each_pin_file_is_read_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = counted_reads(monkeypatch)
    parses = counted_parses(monkeypatch)
    target, warnings, errors = project_target(tmp_path, Options(Strategy.AUTO))
    assert target.source == "setup.py"
    assert target.torch.source == "setup.py"
    assert reads and len(reads) == len(set(reads)), reads  # two searches, one read each
    assert parses.count("setup.py") == 1


def test_the_shared_files_answer_as_searches_made_apart(tmp_path: Path) -> None:
    pin_readers.setup_py_requirements.cache_clear()
    apart = (pins.resolve_target(tmp_path), pins.resolve_torch(tmp_path))
    files = ProjectFiles(tmp_path)
    shared = (
        pins.resolve_target(tmp_path, None, (), files),
        pins.resolve_torch(tmp_path, None, files),
    )
    assert shared == apart
    assert [w.split(":")[0] for w in (*apart[0].warnings, *apart[1].warnings)] == ["setup.cfg"]
    assert files.listed is not None and files.read  # what the torch search took


def test_one_project_s_files_only(tmp_path: Path) -> None:
    other = tmp_path / "requirements"
    with pytest.raises(AssertionError):
        list(pins.candidate_pins(other, pins.TORCH, [], files=ProjectFiles(tmp_path)))
