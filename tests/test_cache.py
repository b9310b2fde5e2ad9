"""The on-disk cache: results are the same with and without it, it ignores itself in git, and
a changed file is read again."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from piped import amp_clipfix

from amp_clipfix import cache_layout
from amp_clipfix.analysis import parse_pool, project_collect
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.cache_layout import SEAL, TAG_BYTES, seal, secret, version_folder
from amp_clipfix.cli import main
from amp_clipfix.models import ErrorKind, FileError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def check(project: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main, ["check", "--lightning-version", "2.6.6", *extra, str(project)]
    )
    return result.output


def test_cached_runs_report_the_same_and_see_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    uncached = check(project, "--no-cache")
    assert not (project / ".amp_clipfix_cache").exists()
    first = check(project)
    second = check(project)
    assert "optim.py:5:51: ACF002" in uncached
    assert first == second == uncached
    assert (project / ".amp_clipfix_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    optim = project / "optim.py"
    optim.write_text(optim.read_text().replace("fused=True", "fused=False"))
    assert "0 findings" in check(project)


def test_a_second_run_reads_every_entry_the_first_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project entries are keyed by the sites' values, not by how pickle lays them out: a
    second run (whose sites come from the cache) finds the resolution the first one stored."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "p"
    shutil.copytree(
        FIXTURES / "trainer_callback_clip_value_from_constructor_unfuse" / "input", project
    )
    (project / "other.py").write_text(
        "import lightning as L\n\n\nclass Plain(L.LightningModule):\n"
        "    def on_before_optimizer_step(self, optimizer):\n"
        "        self.clip_gradients(optimizer, gradient_clip_val=1.0)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(project)
    cache = project / ".amp_clipfix_cache"

    first = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])
    entries = sorted(path.name for path in cache.rglob("*") if path.is_file())
    second = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])

    assert first.output == second.output and "ACF002" in first.output
    assert sorted(path.name for path in cache.rglob("*") if path.is_file()) == entries


def test_an_unchanged_project_is_not_collected_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run takes the whole collection from the cache: no stage, search, parse or
    resolution runs, and the findings and the errors of unparsable files are those of the first.
    Only a collection that made no evaluator is kept whole (a deprecated AMP call here): the
    others are answered by the queries (test_incremental_reads.py)."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    (project / "optim.py").write_text(
        "import torch\n\n\ndef run(x):\n    with torch.cuda.amp.autocast():\n        return x\n"
    )
    (project / "broken.py").write_text("def broken(:\n    AdamW(p, fused=True)\n")
    runner = CliRunner()
    first = runner.invoke(main, ["check", "--lightning-version", "2.6.6", str(project)])

    def collect_stages(*args: object) -> None:
        raise AssertionError("collected again")

    monkeypatch.setattr(project_collect, "collect_stages", collect_stages)
    second = runner.invoke(main, ["check", "--lightning-version", "2.6.6", str(project)])
    assert second.exit_code == first.exit_code == 2
    assert second.output == first.output
    assert "optim.py:5:10: ACF012" in second.output and "broken.py:1:" in second.output


def short_string(text: str) -> bytes:
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE


class RunsACommand:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


@pytest.mark.parametrize("route", ["os.system", "a name reached through an own module"])
def test_entries_a_repository_brings_never_run_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """The cache folder is inside the project, so a pull request can commit entries to it: an
    entry that names anything but amp-clipfix's data is a miss, never a call."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    uncached = check(project, "--no-cache")
    check(project)
    marker = tmp_path / "ran"
    if route == "os.system":
        planted = pickle.dumps(RunsACommand(f"touch {marker}"))
    else:  # protocol 4: STACK_GLOBAL of amp_clipfix.observed's `os.system`, called with one string
        planted = b"\x80\x04" + short_string("amp_clipfix.observed") + short_string("os.system")
        planted += b"\x93" + short_string(f"touch {marker}") + b"\x85R."
    entries = [p for p in (project / ".amp_clipfix_cache").rglob("*") if p.is_file()]
    for entry in entries:
        if entry.name != ".gitignore":
            entry.write_bytes(planted)

    assert check(project) == uncached
    assert not marker.exists()


@pytest.mark.parametrize("linked", ["the cache folder", "this version's folder"])
def test_a_cache_folder_linked_outside_the_project_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: str
) -> None:
    """A repository may bring its cache folder (or this version's) as a link to elsewhere."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = Path(version_folder(project))
    link = link.parent if linked == "the cache folder" else link
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    uncached = check(project, "--no-cache")

    assert check(project) == check(project) == uncached
    replayed = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--lightning-version", "2.6.6", "."],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert replayed.returncode == 1 and "ACF002" in replayed.stdout
    assert list(elsewhere.iterdir()) == []


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with findings, the cache on, and this user's secret in a folder of its own."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", root)
    return root


def git(project: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("shipped", ["committed with git add -f", "extracted from a tarball"])
def test_a_cache_made_on_another_machine_is_never_believed(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shipped: str
) -> None:
    """A repository brings a cache made for the path CI checks it out at, whose entries and
    replay record say "0 findings" (the tool that made them lied): CI reports the findings, as
    `--no-cache` does, and never writes into a cache folder the checkout tracks."""
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "code")
    arguments = ("check", "--lightning-version", "2.6.6", ".")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-machine"))
    with monkeypatch.context() as lying:  # what it collects and resolves: nothing
        lying.setattr(project_collect, "collect_stages", lambda *arguments: None)
        planted = amp_clipfix(project, *arguments)
    assert planted.code == 0 and b"0 findings" in planted.stdout
    assert amp_clipfix(project, *arguments).stdout == planted.stdout  # it replays the lie
    if shipped == "committed with git add -f":
        git(project, "add", "-f", ".amp_clipfix_cache")
        git(project, "commit", "-q", "-m", "cache")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "ci-machine"))
    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    assert fresh.code == 1 and b"optim.py:5:51: ACF002" in fresh.stdout
    assert amp_clipfix(project, *arguments) == fresh  # the replay's record
    assert amp_clipfix(project, *arguments, entry=False) == fresh  # the collection entry
    if shipped == "committed with git add -f":
        assert git(project, "status", "--porcelain", "--ignored") == ""
    else:
        assert amp_clipfix(project, *arguments) == fresh  # its own entries, replayed


def test_a_cache_made_by_another_interpreter_is_not_read(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.12 parses what 3.11 cannot: 3.11's cached "cannot parse" is not 3.12's answer."""
    arguments = ("check", "--lightning-version", "2.6.6", ".")
    real_parse = parse_pool.parse_and_collect

    def older_parser(path: Path, data: bytes) -> parse_pool.Outcome:
        if path.name == "optim.py":
            error = FileError(path, "cannot parse: invalid syntax", ErrorKind.PARSE, 5, 1)
            return None, error
        return real_parse(path, data)

    with monkeypatch.context() as older:
        older.setattr(sys, "version", "3.11.0 (an older interpreter)")
        older.setattr(parse_pool, "parse_and_collect", older_parser)
        assert b"cannot parse" in amp_clipfix(project, *arguments, entry=False).stderr

    monkeypatch.setattr(sys, "version", "3.12.0 (a newer interpreter)")
    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    assert fresh.code == 1 and b"optim.py:5:51: ACF002" in fresh.stdout
    assert amp_clipfix(project, *arguments, entry=False) == fresh
    assert amp_clipfix(project, *arguments) == fresh


def test_an_edited_build_of_the_same_version_size_and_time_is_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edited checkout keeps its version string, and may keep each module's size and
    modification time (a one-character edit, a checkout that sets times): the key holds the
    bytes of the tool's modules, so the edited tool's check prints the edited message."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    tool = tmp_path / "tool"
    shutil.copytree(
        Path(cache_layout.__file__).parent,
        tool / "amp_clipfix",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)

    def check_with_the_tool(*extra: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "amp_clipfix", "check", *extra, "."],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(tool)},
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    assert "ACF002 Trainer clips" in check_with_the_tool()
    rule = tool / "amp_clipfix" / "rules" / "acf002.py"
    status = rule.stat()
    rule.write_bytes(rule.read_bytes().replace(b'"Trainer clips', b'"TRAINER clips', 1))
    os.utime(rule, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert rule.stat().st_size == status.st_size
    shutil.rmtree(rule.parent / "__pycache__", ignore_errors=True)  # it trusts size and time

    assert "ACF002 TRAINER clips" in check_with_the_tool()
    assert check_with_the_tool() == check_with_the_tool("--no-cache")


def stored_entries(project: Path) -> list[Path]:
    folder = Path(version_folder(project))
    entries = (path for path in folder.rglob("*") if path.is_file())
    return sorted(path for path in entries if path.parent.name != "replay")


def part_edges(size: int) -> list[int]:
    """The positions to change in a stored entry of `size` bytes: the first and last byte of
    each of its parts (the seal's mark, the tag, the value), the value's pickle header (protocol,
    frame length, first opcode) and a byte in the middle of the value."""
    value = len(SEAL) + TAG_BYTES
    header = range(value, min(size, value + 12))
    edges = {0, len(SEAL) - 1, len(SEAL), value - 1, *header, (value + size) // 2, size - 1}
    return sorted(position for position in edges if 0 <= position < size)


def test_one_changed_byte_in_an_entry_is_a_miss(project: Path) -> None:
    """Whatever byte of whichever entry changes, the check reports what a fresh one does: never
    ModuleNotFoundError, MemoryError, OverflowError, nor any other traceback."""
    arguments = ("check", "--lightning-version", "2.6.6", ".")
    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    amp_clipfix(project, *arguments, entry=False)
    entries = {path: path.read_bytes() for path in stored_entries(project)}
    assert entries
    for path, data in entries.items():
        assert data.startswith(SEAL), path  # the parts part_edges names
        for position in part_edges(len(data)):
            for value in (0x00, 0xFF, data[position] ^ 0x01):
                path.write_bytes(data[:position] + bytes([value]) + data[position + 1 :])
                assert amp_clipfix(project, *arguments, entry=False) == fresh, (path, position)
        path.write_bytes(data)


def value_entry(key: str, value: bytes) -> bytes:
    """An entry with a value this user's cache sealed (as a store that went wrong would)."""
    code = secret(Path("/nonexistent-project"), create=True)
    assert code is not None
    return seal(code, key, value)


HOSTILE_VALUES = {
    "a module that does not exist": b"\x80\x04"
    + short_string("amp_clipfix.gone")
    + short_string("Thing")
    + b"\x93)\x81.",
    "a length of 2**63 bytes": b"\x80\x04\x8e" + (2**63 - 1).to_bytes(8, "little") + b".",
    "a length beyond the data": b"\x80\x04B" + (2**31 - 1).to_bytes(4, "little") + b".",
    "a frame of 2**63 bytes": b"\x80\x04\x95" + (2**63 - 1).to_bytes(8, "little") + b"N.",
    "truncated": b"\x80\x04\x95\x10",
    "not a pickle": b"hello",
}


@pytest.mark.parametrize("value", list(HOSTILE_VALUES), ids=list(HOSTILE_VALUES))
def test_a_value_that_fails_to_load_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Behind the seal, too: whatever unpickling raises is a miss, never a traceback."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    cache = Cache(tmp_path / "project")
    key = "0" * 64
    entry = Path(cache.folder) / key[-2:] / key
    entry.parent.mkdir(parents=True)
    entry.write_bytes(value_entry(key, HOSTILE_VALUES[value]))
    assert cache.load(key) is None


def test_an_entry_is_read_whole_only_up_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted pipe or an oversized file is a miss (nothing waits, nothing huge is read)."""
    monkeypatch.setattr(cache_layout, "MAX_ENTRY_BYTES", 100)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    cache = Cache(tmp_path / "project")
    big, pipe = "1" * 64, "2" * 64
    for key in (big, pipe):
        (Path(cache.folder) / key[-2:]).mkdir(parents=True)
    (Path(cache.folder) / big[-2:] / big).write_bytes(value_entry(big, pickle.dumps("x" * 200)))
    os.mkfifo(Path(cache.folder) / pipe[-2:] / pipe)
    assert cache.load(big) is None and cache.load(pipe) is None
    cache.store(big, "x" * 200)
    assert cache.load(big) is None
    cache.store(big, "small")
    assert cache.load(big) == "small"


def test_a_secret_the_repository_brings_is_never_used(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI may point XDG_CACHE_HOME into the checkout (to cache it): a repository that brings
    the secret its lying entries were sealed with still gets a fresh answer."""
    arguments = ("check", "--lightning-version", "2.6.6", ".")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-machine"))
    with monkeypatch.context() as lying:
        lying.setattr(project_collect, "collect_stages", lambda *arguments: None)
        assert b"0 findings" in amp_clipfix(project, *arguments).stdout
    shipped = project / ".cache" / "amp-clipfix"
    shutil.copytree(tmp_path / "other-machine" / "amp-clipfix", shipped)
    assert (shipped / "secret").stat().st_mode & 0o777 == 0o600

    monkeypatch.setenv("XDG_CACHE_HOME", str(project / ".cache"))
    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    assert fresh.code == 1 and b"optim.py:5:51: ACF002" in fresh.stdout
    assert amp_clipfix(project, *arguments) == fresh
    assert amp_clipfix(project, *arguments, entry=False) == fresh
