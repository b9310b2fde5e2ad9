"""The pin files a search asks are listed only as far as it reads them (pins.sources through
pin_files.Listing): listing a Dockerfile's or a CI workflow's entries means reading it and
splitting its `pip install` lines with shlex, which a project whose requirements.txt decides
both searches (Lightning's and torch's) never needs. Whatever is listed, both searches answer
as they do with every source listed first, and each entry is listed once however many passes
and searches iterate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_pin_files_shared import counted_reads
from test_pins import project
from test_startup import imported_modules

from amp_clipfix.kinds import Strategy
from amp_clipfix.pipeline import Options, project_target
from amp_clipfix.project import pins
from amp_clipfix.project.pin_files import Listing, ProjectFiles

WORKFLOW = """\
jobs:
  test:
    steps:
      - run: pip install -r requirements/ci.txt
"""
DECIDED = {
    "requirements.txt": "torch>=2.1,<2.3\nlightning>=2.1,<2.3\n",
    "requirements/ci.txt": "lightning==2.0.9\ntorch==2.0.1\n",
    "Dockerfile": "FROM python:3.11\nRUN pip install lightning==1.9.5\n",
    ".github/workflows/test.yml": WORKFLOW,
}
# Nothing before the workflow pins either package: its included file decides (second tier).
UNDECIDED = {**DECIDED, "requirements.txt": "numpy\n", "Dockerfile": "FROM python:3.11\n"}


@pytest.fixture(autouse=True)
def nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins only (not the Lightning or torch installed next to the tests)."""
    monkeypatch.setattr(pins, "installed_target", lambda: None)
    monkeypatch.setattr(pins, "installed_version", lambda name: None)


def listed_first(root: Path) -> ProjectFiles:
    """Pin files whose sources were all listed before any search asked (as 7dbd3fb did)."""
    files = ProjectFiles(root)
    files.listed = Listing(iter(list(pins.sources(root, files))))
    return files


def test_requirements_that_decide_leave_the_dockerfile_and_workflow_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, DECIDED)
    monkeypatch.chdir(root)
    reads = counted_reads(monkeypatch)
    target, warnings, errors = project_target(root, Options(Strategy.AUTO))
    assert (target.source, target.pin) == ("requirements.txt", "lightning>=2.1,<2.3")
    assert (target.torch.source, target.torch.pin) == ("requirements.txt", "torch>=2.1,<2.3")
    assert (warnings, errors) == ((), ())
    assert {"Dockerfile", "test.yml", "ci.txt"} & set(reads) == set()


@pytest.mark.parametrize("files", [DECIDED, UNDECIDED], ids=["decided", "undecided"])
def test_both_searches_answer_as_with_every_source_listed_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    root = project(tmp_path, files)
    monkeypatch.chdir(root)
    lazy = ProjectFiles(root)
    answers = (pins.resolve_target(root, None, (), lazy), pins.resolve_torch(root, None, lazy))
    eager = listed_first(root)
    expected = (pins.resolve_target(root, None, (), eager), pins.resolve_torch(root, None, eager))
    assert answers == expected
    if files is UNDECIDED:
        assert answers[0].target.source == answers[1].target.source == "requirements/ci.txt"
        assert [str(r) for r in answers[0].target.releases] == ["2.0.9"]


def test_an_undecided_search_lists_every_source(tmp_path: Path) -> None:
    root = project(tmp_path, UNDECIDED)
    files = ProjectFiles(root)
    pins.resolve_target(root, None, (), files)
    assert files.listed is not None
    assert [path.name for path, _, _ in files.listed] == [
        path.name for path, _, _ in pins.sources(root, ProjectFiles(root))
    ]
    assert [path.name for path, _, _ in files.listed][-2:] == ["test.yml", "ci.txt"]


def test_a_listing_lists_each_entry_once_for_every_iteration() -> None:
    made: list[int] = []

    def stream() -> Iterator[tuple[Path, object, object]]:
        for index in range(4):
            made.append(index)
            yield Path(str(index)), None, None

    listing = Listing(stream())  # type: ignore[arg-type]
    first = iter(listing)
    assert next(first)[0] == Path("0")
    assert made == [0]
    second = [path.name for path, _, _ in listing]  # past the first, which then goes on
    assert [path.name for path, _, _ in first] == ["1", "2", "3"]
    assert second == ["0", "1", "2", "3"]
    assert [path.name for path, _, _ in listing] == ["0", "1", "2", "3"]
    assert made == [0, 1, 2, 3]


def test_a_check_whose_requirements_decide_imports_no_shlex(tmp_path: Path) -> None:
    root = project(tmp_path, {**DECIDED, "train.py": "print('hello')\n"})
    modules, done = imported_modules(root, "check", "--no-cache", "--format", "json", ".")
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"source": "requirements.txt"' in done.stdout
    assert "amp_clipfix.project.pins" in modules
    assert "shlex" not in modules
