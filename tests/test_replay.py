"""The replay of an unchanged `check` (replay.py): it prints what the run printed, and anything a
run could see differently (a file's bytes, a new file, a configuration, git's ignores, the
environment, the folder it is started from) makes it run again."""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from piped import amp_clipfix

from amp_clipfix import observed, replay
from amp_clipfix.cache_layout import seal, secret, unseal, version_folder
from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FINDING = "optim.py:5:51: ACF002"


def environment(**extra: str) -> dict[str, str]:
    variables = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    return {**variables, **extra}


def check(project: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`amp-clipfix check` as a user starts it, from the project, its output piped."""
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", *arguments],
        cwd=project,
        env=environment(**variables),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def records(project: Path) -> list[Path]:
    """The noted runs (replay.STATUSES, the table of settled reads, is none)."""
    folder = Path(version_folder(project)) / "replay"
    found = folder.iterdir() if folder.is_dir() else []
    return sorted(path for path in found if replay._is_record_name(path.name))


def mark_records(project: Path) -> None:
    """Make every noted run print `replayed` instead: what the next run prints then says
    whether it was replayed (sealed with this user's secret, as the run sealed it)."""
    key = secret(project)
    assert key is not None
    for record in records(project):
        value = unseal(key, record.name, record.read_bytes())
        assert value is not None
        answers, _, code, statuses = replay.unpacked(value)
        marked = replay.packed(answers, [(1, b"replayed\n")], code, statuses)
        record.write_bytes(seal(key, record.name, marked))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", root)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    return root


def test_an_unchanged_check_prints_what_it_printed_without_running(project: Path) -> None:
    first = check(project, ".")
    assert first.returncode == 1 and FINDING in first.stdout
    assert len(records(project)) == 1

    second = check(project, ".")
    assert (second.stdout, second.stderr, second.returncode) == (
        first.stdout,
        first.stderr,
        first.returncode,
    )

    mark_records(project)
    third = check(project, ".")
    assert (third.stdout, third.returncode) == ("replayed\n", 1)


def test_output_of_both_streams_is_replayed_in_order(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.amp-clipfix]\nignore = ["ACF999"]\n', encoding="utf-8"
    )
    first = check(project, ".")
    second = check(project, ".")
    assert "unknown code 'ACF999'" in first.stderr
    assert (second.stdout, second.stderr) == (first.stdout, first.stderr)

    def together(*arguments: str) -> str:  # both streams into one pipe, as `2>&1` does
        return subprocess.run(
            [sys.executable, "-m", "amp_clipfix", "check", *arguments, "."],
            cwd=project,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        ).stdout

    assert together() == together() == together("--no-cache")


def edit_source(project: Path) -> None:
    optim = project / "optim.py"
    optim.write_text(optim.read_text().replace("fused=True", "fused=False"))


def add_file(project: Path) -> None:
    (project / "more").mkdir()
    (project / "more" / "fabric_run.py").write_text(
        "import lightning as L\nimport torch\n\n\n"
        "def run(model):\n"
        '    fabric = L.Fabric(precision="16-mixed")\n'
        "    optimizer = torch.optim.AdamW(model.parameters(), fused=True)\n"
        "    model, optimizer = fabric.setup(model, optimizer)\n"
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)\n",
        encoding="utf-8",
    )


def remove_file(project: Path) -> None:
    (project / "optim.py").unlink()


def configure(project: Path) -> None:
    with (project / "pyproject.toml").open("a", encoding="utf-8") as file:
        file.write('\n[tool.amp-clipfix]\nignore = ["ACF002"]\n')


def pin_lightning(project: Path) -> None:
    (project / "requirements.txt").write_text("lightning==2.4.0\n", encoding="utf-8")


def ignore_in_git(project: Path) -> None:
    (project / ".gitignore").write_text("optim.py\n", encoding="utf-8")


CHANGES: list[Callable[[Path], None]] = [
    edit_source,
    add_file,
    remove_file,
    configure,
    pin_lightning,
    ignore_in_git,
]


@pytest.mark.parametrize("change", CHANGES, ids=[change.__name__ for change in CHANGES])
def test_a_change_the_run_could_see_runs_it_again(
    project: Path, change: Callable[[Path], None]
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    first = check(project, ".")
    assert records(project)

    change(project)
    second = check(project, ".")

    uncached = check(project, "--no-cache", ".")
    assert (second.stdout, second.stderr) == (uncached.stdout, uncached.stderr)
    assert second.stdout != first.stdout


def test_another_folder_or_environment_or_command_line_runs_again(project: Path) -> None:
    check(project, ".")
    mark_records(project)

    assert check(project, ".", NO_COLOR="1").stdout != "replayed\n"
    assert check(project, "--select", "ACF002", ".").stdout != "replayed\n"
    assert check(project / "..", "project").stdout != "replayed\n"
    assert check(project, ".").stdout == "replayed\n"


def test_a_check_from_inside_a_project_is_noted_in_its_root(project: Path) -> None:
    inside = project / "pkg"
    inside.mkdir()
    (project / "optim.py").rename(inside / "optim.py")
    (project / "model.py").write_text(
        (project / "model.py").read_text().replace("from optim", "from pkg.optim")
    )
    first = check(inside, "..")
    assert first.stdout.startswith("optim.py:5:51: ACF002")
    assert "precision: ../train.py:9" in first.stdout
    assert len(records(project)) == 1
    assert not (inside / ".amp_clipfix_cache").exists()

    mark_records(project)
    assert check(inside, "..").stdout == "replayed\n"


@pytest.mark.parametrize(
    "arguments",
    [
        ["--no-cache", "."],
        ["-o", "report.txt", "."],
        ["--output-file=report.txt", "."],
        ["-v", "."],
    ],
    ids=["no-cache", "output-file", "output-file-equals", "verbose"],
)
def test_runs_that_are_never_noted(project: Path, arguments: list[str]) -> None:
    check(project, ".")  # the project's cache folder exists
    noted = records(project)
    result = check(project, *arguments)
    assert result.returncode == 1
    assert records(project) == noted


def test_a_run_with_errors_is_never_noted(project: Path) -> None:
    (project / "binary.py").write_bytes(b"x = 1\n\x00\n")
    assert check(project, ".").returncode == 2
    assert records(project) == []


@pytest.mark.parametrize("given", ["", "import torch\n"], ids=["empty", "code"])
def test_stdin_is_never_noted(project: Path, given: str) -> None:
    check(project, ".")  # the project's cache folder exists
    noted = records(project)
    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "-"],
        cwd=project,
        env=environment(),
        input=given,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0
    assert records(project) == noted


def test_the_environment_variable_turns_it_off(project: Path) -> None:
    check(project, ".")
    mark_records(project)
    assert check(project, ".", AMP_CLIPFIX_NO_CACHE="1").stdout != "replayed\n"


FIXTURE_PROJECTS = sorted(
    path / "input" for path in FIXTURES.iterdir() if (path / "input").is_dir()
)


@pytest.mark.parametrize("source", FIXTURE_PROJECTS, ids=[p.parent.name for p in FIXTURE_PROJECTS])
def test_every_file_system_question_of_a_check_is_noted(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run reads, lists or looks up goes through observed.py: a question asked any other
    way would not be asked again by the replay, which could then print an outdated report."""
    project = tmp_path / "project"
    shutil.copytree(source, project, symlinks=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    monkeypatch.chdir(project)
    touched: set[str] = set()
    for name in ("stat", "lstat", "scandir", "listdir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, spying(real, touched))

    with observed.Recording() as seen, opened_files(touched):
        CliRunner().invoke(main, ["check", "--no-cache", "."], catch_exceptions=False)

    asked = {path for _, path, _ in seen.answers}
    resolved = {path for kind, path, _ in seen.answers if kind == "realpath"}
    inside = str(tmp_path)
    unasked = {
        path
        for path in touched
        if path.startswith(inside)
        and not os.path.basename(path).startswith("<")  # `<unknown>`: a warning's source line
        and path not in asked
        and not any(_leads_to(question, path) for question in resolved)
    }
    assert unasked == set()
    assert observed.still_answers(seen.answers)


def _leads_to(question: str, path: str) -> bool:
    """realpath() looks up each folder on the way to its path."""
    return question.startswith(os.path.join(path, ""))


def spying(real: Callable[..., object], touched: set[str]) -> Callable[..., object]:
    def spy(path: object = ".", *arguments: object, **options: object) -> object:
        if isinstance(path, (str, os.PathLike)):
            touched.add(os.path.abspath(os.fspath(path)))
        return real(path, *arguments, **options)

    return spy


_opened: list[set[str]] = []  # where the audit hook notes opened files, while a test listens


def _note_opened(event: str, arguments: tuple[object, ...]) -> None:
    if _opened and event == "open" and isinstance(arguments[0], (str, os.PathLike)):
        _opened[-1].add(os.path.abspath(os.fspath(arguments[0])))


@contextlib.contextmanager
def opened_files(touched: set[str]) -> Iterator[None]:
    """Files opened inside the block are added to `touched` (one audit hook for the whole
    session: hooks cannot be removed)."""
    if not _hook:
        sys.addaudithook(_note_opened)
        _hook.append(True)
    _opened.append(touched)
    try:
        yield
    finally:
        _opened.pop()


_hook: list[bool] = []


def test_a_planted_record_never_runs_git_with_other_arguments(tmp_path: Path) -> None:
    """A record is a file in the project: what it asks of git is only ever a listing."""
    hook = tmp_path / "ran"
    planted = {("git", str(tmp_path), f"-c\0alias.x=!touch {hook}\0x"): None}
    assert not observed.still_answers(planted)
    assert not hook.exists()
    assert not observed.still_answers({("unknown", str(tmp_path), ""): None})


def test_the_oldest_records_are_removed_beyond_the_newest_32(project: Path) -> None:
    check(project, ".")
    folder = records(project)[0].parent
    key = secret(project)
    assert key is not None
    for number in range(40):  # records this user's runs noted (only those are ever removed)
        old = folder / f"{number:064x}"
        old.write_bytes(seal(key, old.name, marshal.dumps(({}, [], 0))))
        os.utime(old, ns=(number * 10**9, number * 10**9))  # long before the run

    second = check(project, "--select", "ACF", ".")

    assert FINDING in second.stdout
    kept = records(project)
    assert len(kept) == 32
    assert {f"{number:064x}" for number in range(10, 40)} <= {path.name for path in kept}


def test_a_run_that_saw_a_file_change_under_it_is_never_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SARIF reads a notebook twice (its sites, then the file lines of a cell); an editor saves
    it in between: the run is not noted, so no later run replays its mixed output."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "notebook_trainer_unfuse" / "input", project)
    notebook = project / "train.ipynb"
    content = json.loads(notebook.read_text(encoding="utf-8"))
    content["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["# Notes"]})
    saved = json.dumps(content, indent=1).encode()
    arguments = ("check", "--format", "sarif", "--lightning-version", "2.6.6", ".")
    real_read = observed.read_bytes

    def editor_saves_after_the_first_read(path: str | os.PathLike[str]) -> bytes:
        data = real_read(path)
        if Path(path).name == "train.ipynb" and data != saved:
            notebook.write_bytes(saved)
        return data

    with monkeypatch.context() as racing:
        racing.setattr(observed, "read_bytes", editor_saves_after_the_first_read)
        amp_clipfix(project, *arguments)
    assert notebook.read_bytes() == saved

    fresh = amp_clipfix(project, *arguments, "--no-cache", entry=False)
    assert fresh.code == 1
    assert amp_clipfix(project, *arguments) == fresh


def test_a_replay_into_a_reader_that_stopped_exits_as_the_run_does(project: Path) -> None:
    """`amp-clipfix check | head -1`: the reader is gone before the replay writes; no
    BrokenPipeError traceback, the exit code of a run into a closed pipe (click's 1)."""

    def into_a_closed_pipe(*arguments: str) -> tuple[int, str]:
        reading, writing = os.pipe()
        os.close(reading)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "amp_clipfix", "check", *arguments, "."],
                cwd=project,
                env=environment(),
                stdout=writing,
                stderr=subprocess.PIPE,
                text=True,
                timeout=300,
                check=False,
            )
        finally:
            os.close(writing)
        return result.returncode, result.stderr

    check(project, ".")
    key = secret(project)
    assert key is not None
    for record in records(project):  # stderr first, so the replay shows itself, then stdout
        value = unseal(key, record.name, record.read_bytes())
        assert value is not None
        answers, output, code, statuses = replay.unpacked(value)
        marked = replay.packed(answers, [(2, b"replayed\n"), *output], code, statuses)
        record.write_bytes(seal(key, record.name, marked))

    code, stderr = into_a_closed_pipe()
    assert stderr == "replayed\n"
    assert code == into_a_closed_pipe("--no-cache")[0] == 1


@pytest.mark.parametrize(
    "variables",
    [{"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}],
    ids=["FORCE_COLOR", "TTY_COMPATIBLE"],
)
def test_a_run_that_draws_for_a_terminal_is_never_noted(
    project: Path, variables: dict[str, str]
) -> None:
    """Forced terminal output (a progress bar, the summary with the time taken) in a piped
    run: each run prints its own, never the first run's."""
    first = check(project, ".", **variables)
    assert first.returncode == 1 and "wall time" in first.stderr
    assert records(project) == []
    second = check(project, ".", **variables)
    assert second.returncode == 1 and "wall time" in second.stderr
    assert records(project) == []


@pytest.mark.needs("lightning")  # the first run names the Lightning installed here
def test_what_else_a_sys_path_folder_holds_is_no_reason_to_run_again(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed Lightning is found by the names of the distributions on sys.path: a file
    of another kind appearing in a sys.path folder between two runs (the `__pycache__` or log
    another process writes; under pytest-xdist the other worker does, in the folders the
    test configuration puts on sys.path) leaves the record good, a Lightning installed there
    does not. In this process, as `tests/test_cache_equivalence.py` runs the command."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    packages = tmp_path / "packages"
    packages.mkdir()
    monkeypatch.syspath_prepend(str(packages))  # searched before the installed Lightning's
    first = amp_clipfix(project, "check", ".")
    assert first.code == 1 and b"from installed distribution" in first.stdout

    (packages / "__pycache__").mkdir()
    (packages / "notes.log").write_bytes(b"written by another process\n")
    with monkeypatch.context() as patched:
        patched.setattr(replay, "_command_line", not_run_again)
        assert amp_clipfix(project, "check", ".") == first

    installed = packages / "lightning-2.0.9.dist-info"
    installed.mkdir()
    (installed / "METADATA").write_text("Metadata-Version: 2.1\nName: lightning\nVersion: 2.0.9\n")
    again = amp_clipfix(project, "check", ".")
    assert b"assumed lightning 2.0.9 from installed distribution" in again.stdout
    assert again == amp_clipfix(project, "check", "--no-cache", ".", entry=False)


def not_run_again(*arguments: object) -> None:
    raise AssertionError("an unchanged check ran again instead of being replayed")
