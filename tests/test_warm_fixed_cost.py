"""What every warm run pays whatever changed, cut where the answer cannot change (issue 35: the
pre-commit hook's command after an edit to a module no query reads, on a 3,000-file tree):

- a prefilter's answer kept for a run by file and stage with the bytes it was asked of, which
  are compared, never hashed (`collection.prefiltered`);
- a file with a known settled status read whole at once and not read again to see its end
  (`observed._read_with_status`), a status noted only with as many bytes as it says;
- the requirement files a Dockerfile's, a workflow's or a noxfile's install command includes,
  kept by the file's bytes with the pin readers' answers (`pin_answers.PinMemo.includes`).

Each output is a cold `--no-cache` run's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from piped import amp_clipfix
from spied import first_arguments

from amp_clipfix import observed
from amp_clipfix.analysis import collection as collection_module
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.analysis.collection import Collection, prefiltered
from amp_clipfix.kinds import Strategy
from amp_clipfix.pipeline import Options, project_target
from amp_clipfix.project import install_readers
from amp_clipfix.project.pin_answers import PinMemo, _included
from amp_clipfix.sources.base import Stage

REPO = Path(__file__).resolve().parent.parent
DOCKER_FIXTURE = REPO / "fixtures" / "pin_dockerfile_1_8_6_code_1x_precision_kept" / "input"


class Unhashable(bytes):
    """A file's bytes that refuse to be hashed: what a memo keyed by the text would do."""

    def __hash__(self) -> int:
        raise AssertionError("a file's bytes were hashed")


class CountingAdapter:
    """A source adapter whose prefilter counts the texts it tests."""

    def __init__(self) -> None:
        self.tested: list[bytes] = []

    def prefilter(self, stage: Stage) -> object:
        def test(data: bytes) -> bool:
            self.tested.append(bytes(data))
            return b"fused" in data

        return test


@pytest.fixture
def adapter(monkeypatch: pytest.MonkeyPatch) -> CountingAdapter:
    counting = CountingAdapter()
    monkeypatch.setattr(collection_module, "adapter_for", lambda path: counting)
    return counting


def test_a_prefilter_answer_is_kept_for_the_run_without_hashing_the_text(
    adapter: CountingAdapter,
) -> None:
    collection = Collection()
    data = Unhashable(b"opt = AdamW(fused=True)\n")
    path = Path("train.py")
    assert prefiltered(path, data, Stage.FUSED_OPTIMIZER, collection) is True
    assert prefiltered(path, data, Stage.FUSED_OPTIMIZER, collection) is True
    assert adapter.tested == [b"opt = AdamW(fused=True)\n"]


def test_a_prefilter_asked_of_other_bytes_or_another_stage_is_tested_again(
    adapter: CountingAdapter,
) -> None:
    collection = Collection()
    path = Path("train.py")
    first, second = b"opt = AdamW(fused=True)\n", b"opt = AdamW()\n"
    assert prefiltered(path, first, Stage.FUSED_OPTIMIZER, collection) is True
    assert prefiltered(path, second, Stage.FUSED_OPTIMIZER, collection) is False
    assert prefiltered(path, bytes(second), Stage.FUSED_OPTIMIZER, collection) is False
    assert prefiltered(path, second, Stage.TRAINER, collection) is False
    assert adapter.tested == [first, second, second]


class ObservedOs:
    """`os` as observed.py sees it, with another `read`: the process's own `os.read` (pytest's,
    a worker's pipes) is left alone."""

    def __init__(self, read: Callable[[int, int], bytes]) -> None:
        self.read = read

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size each `os.read` of observed.py returns."""
    seen: list[int] = []

    def spy(handle: int, size: int) -> bytes:
        data = os.read(handle, size)
        seen.append(len(data))
        return data

    monkeypatch.setattr(observed, "os", ObservedOs(spy))
    return seen


def noted(path: Path) -> dict[str, object]:
    """The table of settled reads a run that reads `path` leaves (replay.STATUSES)."""
    with observed.Recording() as seen:
        observed.read_bytes(path)
    return dict(seen.table())


def read_again(path: Path, known: dict[str, object]) -> tuple[bytes, observed.Recording]:
    with observed.Recording() as seen:
        seen.known = known
        return observed.read_bytes(path), seen


def test_a_settled_file_with_its_known_status_is_read_with_one_read(
    tmp_path: Path, reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)  # written before the run began
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n" * 5000)
    known = noted(path)
    assert str(path) in known
    del reads[:]
    data, seen = read_again(path, known)
    assert data == b"x = 1\n" * 5000
    assert reads == [30000]
    assert seen.answers[("read", str(path), "")] == observed._digest(data)


def test_a_file_without_a_known_status_is_read_to_its_end(tmp_path: Path, reads: list[int]) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    data, _ = read_again(path, {})
    assert data == b"x = 1\n"
    assert reads == [6, 0]


def test_a_file_grown_since_its_noted_status_is_read_whole_and_hashed(
    tmp_path: Path, reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    known = noted(path)
    with path.open("ab") as grown:
        grown.write(b"y = 2\n")
    data, seen = read_again(path, known)
    assert data == b"x = 1\ny = 2\n"
    assert seen.answers[("read", str(path), "")] == observed._digest(b"x = 1\ny = 2\n")


def test_a_short_first_read_of_a_settled_file_reads_on_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n" * 100)
    known = noted(path)
    monkeypatch.setattr(observed, "os", ObservedOs(lambda handle, size: os.read(handle, 7)))
    data, seen = read_again(path, known)
    assert data == b"x = 1\n" * 100
    assert seen.answers[("read", str(path), "")] == observed._digest(data)


def test_a_status_is_noted_only_with_as_many_bytes_as_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    status = os.stat(path)
    with observed.Recording() as seen:
        seen.settled(str(path), status, status.st_size + 1)
        seen.settled(str(path.with_name("b.py")), status, status.st_size)
    assert seen.statuses == {
        str(path): None,
        str(path.with_name("b.py")): observed.signature(status),
    }


def docker_project(tmp_path: Path) -> Path:
    """A project whose Dockerfile installs `docker/requirements.txt`, which pins 1.8.6."""
    project = tmp_path / "project"
    shutil.copytree(DOCKER_FIXTURE, project)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "Dockerfile").write_text(
        "FROM python:3.9-slim\nRUN pip install -r docker/requirements.txt\n", encoding="utf-8"
    )
    (project / "docker").mkdir()
    (project / "docker" / "requirements.txt").write_text(
        "pytorch-lightning==1.8.6\n", encoding="utf-8"
    )
    (project / "docker" / "other.txt").write_text("lightning==2.0.9\n", encoding="utf-8")
    return project


def test_the_files_an_install_command_includes_are_listed_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = docker_project(tmp_path)
    parsed = first_arguments(monkeypatch, install_readers, "_arguments")
    options = Options(strategy=Strategy.AUTO)
    files = (project / "train.py",)
    install_readers._install_arguments.cache_clear()
    first = project_target(project, options, files)
    assert parsed  # the Dockerfile's commands were read
    assert first[0].pin == "pytorch-lightning 1.8.6"
    assert first[0].source.endswith("docker/requirements.txt")
    install_readers._install_arguments.cache_clear()  # a new process
    del parsed[:]
    assert project_target(project, options, files) == first
    assert parsed == []


def test_an_include_edited_between_runs_reports_as_a_cold_run(tmp_path: Path) -> None:
    project = docker_project(tmp_path)
    first = amp_clipfix(project, "check", ".")
    assert b"1.8.6" in first.stdout
    assert (first.stdout, first.code) == cold(project)
    dockerfile = project / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("requirements.txt", "other.txt"))
    install_readers._install_arguments.cache_clear()
    warm = amp_clipfix(project, "check", ".")
    assert b"2.0.9" in warm.stdout and b"1.8.6" not in warm.stdout
    assert (warm.stdout, warm.code) == cold(project)


def cold(project: Path) -> tuple[bytes, int]:
    run = amp_clipfix(project, "check", "--no-cache", ".")
    return run.stdout, run.code


@pytest.mark.parametrize(
    "kept",
    [None, "x", ("includes",), ("pins", ("a",)), ("includes", ["a"]), ("includes", ("a", 1))],
    ids=["none", "text", "short", "other-kind", "list", "not-text"],
)
def test_a_malformed_includes_answer_is_no_answer(kept: object) -> None:
    assert _included(kept) is None
    assert _included(("includes", ("a.txt", "b.txt"))) == ("a.txt", "b.txt")


def test_an_includes_function_not_of_ours_is_asked_and_never_kept(tmp_path: Path) -> None:
    memo = PinMemo(Cache(tmp_path))
    asked: list[bytes] = []

    def includes(data: bytes) -> list[str]:
        asked.append(data)
        return ["a.txt"]

    assert memo.includes(includes, b"RUN pip install -r a.txt\n") == ["a.txt"]
    assert memo.includes(includes, b"RUN pip install -r a.txt\n") == ["a.txt"]
    assert len(asked) == 2
    assert memo.used == {}
