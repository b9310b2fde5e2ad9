"""Errors a user can act on (issue 40): one `path: error: ...` line and exit 2 for every problem
with a path, a named file that cannot be read as its kind, `--stdin-filename` alone reading
stdin, configuration errors without click's usage text, the summary's two counts, stdout and
stderr sharing one file, the progress bar only for long runs, and the prompt decided once."""

from __future__ import annotations

import errno
import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from test_cli import SAMPLE, invoke

from amp_clipfix import observed
from amp_clipfix.output.terminal import ProgressBar

PINNED = ("--lightning-version", "2.6.6", "--no-cache")
ENV = {**os.environ, "AMP_CLIPFIX_NO_CACHE": "1"}
for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
    ENV.pop(name, None)


def test_a_named_file_that_is_not_python_is_an_error(sample: Path) -> None:
    (sample / "notes.txt").write_text("hello world\n")
    result = invoke("check", *PINNED, "sample_project/notes.txt")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "sample_project/notes.txt: error: not a Python file, notebook or YAML config (read as "
        "Python, as a named file is: invalid syntax)"
    ]


def test_a_named_python_file_that_is_not_utf8_is_an_error(sample: Path) -> None:
    (sample / "latin.py").write_bytes(b'# no coding cookie\nname = "caf\xe9"\n')
    result = invoke("check", *PINNED, "sample_project/latin.py", "sample_project/model.py")
    assert result.exit_code == 2
    assert "sample_project/latin.py: error: cannot decode as utf-8 at byte 30" in result.stderr
    # the run goes on with the other file
    assert "sample_project/model.py:21:76: ACF002" in result.stdout


def test_a_named_pin_file_or_script_without_suffix_is_no_error(sample: Path) -> None:
    (sample / "requirements.txt").write_text("lightning==2.6.6\n")
    (sample / "train").write_text("print('a script without a suffix')\n")
    result = invoke("check", *PINNED, "sample_project/requirements.txt", "sample_project/train")
    assert result.exit_code == 1, result.output  # the project's findings, nothing refused
    assert "error" not in result.stderr


def test_stdin_filename_alone_reads_stdin(sample: Path) -> None:
    code = (SAMPLE / "train_fabric.py").read_bytes()
    result = invoke(
        "check", *PINNED, "--stdin-filename", "sample_project/fabric.py", input=code.decode()
    )
    assert result.exit_code == 1
    reported = [line for line in result.stdout.splitlines() if line[:1] not in (" ", "")]
    assert reported[0].startswith("sample_project/fabric.py:18:9: ACF001")
    assert "(1 file checked)" in result.stdout  # stdin only, not the current folder


def test_a_configuration_error_is_one_line_without_usage(sample: Path) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.amp-clipfix]\nstrategy = "fast"\n')
    result = invoke("check", *PINNED, "sample_project")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "sample_project/pyproject.toml: error: [tool.amp-clipfix] 'strategy' must be one of "
        "auto, unscale, bf16, unfuse, guard, migrate, native, not 'fast'"
    ]
    assert "Usage:" not in result.output and "--help" not in result.output
    missing = invoke("check", "--config", "nowhere.toml", "sample_project")
    assert missing.exit_code == 2
    assert missing.stderr == "nowhere.toml: error: no such file (--config)\n"


def test_an_unreadable_named_file_gets_the_same_line_as_in_a_folder(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = (sample / "model.py").resolve()
    real_read, real_access = observed.read_bytes, os.access

    def read_bytes(path: str | os.PathLike[str]) -> bytes:
        if Path(path).resolve() == locked:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_read(path)

    def access(path: object, mode: int, **kwargs: object) -> bool:
        if isinstance(path, (str, os.PathLike)) and Path(path).resolve() == locked:
            return False  # what click's Path(readable=True) asked (root reads any file)
        return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(observed, "read_bytes", read_bytes)
    monkeypatch.setattr(os, "access", access)
    named = invoke("check", *PINNED, "sample_project/model.py")
    folder = invoke("check", *PINNED, "sample_project")
    line = "sample_project/model.py: error: cannot read: Permission denied"
    assert named.exit_code == folder.exit_code == 2
    assert line in named.stderr.splitlines()
    assert line in folder.stderr.splitlines()
    assert "Invalid value" not in named.output


def test_the_summary_counts_files_with_findings_and_files_checked(sample: Path) -> None:
    result = invoke("check", *PINNED, "sample_project")
    assert result.stdout.splitlines()[-1].startswith(
        "3 findings (3 fixable with --strategy auto) in 2 files (3 files checked); "
    )
    (sample / "model.py").write_text("x = 1\n")
    (sample / "train_fabric.py").write_text("y = 2\n")
    clean = invoke("check", *PINNED, "sample_project")
    assert clean.stdout.splitlines()[-1].startswith(
        "0 findings (0 fixable with --strategy auto) in 3 files checked; "
    )


@pytest.mark.parametrize("command", [["check", "-v"], ["apply", "--dry-run", "-v"]])
def test_stdout_and_stderr_into_one_file_keep_every_line_whole(
    sample: Path, tmp_path: Path, command: list[str]
) -> None:
    broken = "import torch\nopt = torch.optim.AdamW([], fused=True)\nx = (\n"
    (sample / "broken.py").write_text(broken)
    alone = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", *command, *PINNED, "sample_project"],
        capture_output=True,
        cwd=tmp_path,
        env=ENV,
        check=False,
    )
    both = tmp_path / "both.txt"
    with both.open("wb") as stream:  # `> both.txt 2>&1`: one open file, one offset
        subprocess.run(
            [sys.executable, "-m", "amp_clipfix", *command, *PINNED, "sample_project"],
            stdout=stream,
            stderr=stream,
            cwd=tmp_path,
            env=ENV,
            check=False,
        )
    mixed = both.read_bytes()

    def whole_lines(data: bytes) -> list[bytes]:  # the summary table's time varies
        return sorted(line for line in data.splitlines(keepends=True) if b"wall time" not in line)

    assert whole_lines(mixed) == whole_lines(alone.stdout + alone.stderr)
    assert mixed.startswith(alone.stdout[:40])  # nothing written over the report's start
    assert b"broken.py:3:5: error: cannot parse" in mixed


def test_the_progress_bar_shows_only_after_a_second() -> None:
    now = [0.0]
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
    started: list[bool] = []
    with ProgressBar(console, clock=lambda: now[0], on_start=lambda: started.append(True)) as bar:
        bar.planned(3)
        bar.done(3)
        assert not bar.shown and screen.getvalue() == ""  # three files, at once: no bar
        now[0] = 1.5
        bar.done(0)
        assert bar.shown and started == [True]
    assert "files" in screen.getvalue()


def test_the_prompt_asks_when_only_stderr_is_redirected(sample: Path, tmp_path: Path) -> None:
    """stdin and stdout on a terminal, stderr to a file: the diff is drawn and the question
    asked (on stdout, where the person looks), never "Not a terminal" after the diff."""
    leader, follower = pty.openpty()
    log = (tmp_path / "stderr.txt").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "amp_clipfix", "apply", *PINNED, "sample_project"],
        stdin=follower,
        stdout=follower,
        stderr=log,
        cwd=tmp_path,
        env={**ENV, "TERM": "xterm", "COLUMNS": "120"},
    )
    os.close(follower)
    output = b""
    deadline = time.monotonic() + 120
    answered = 0
    while True:
        ready, _, _ = select.select([leader], [], [], max(deadline - time.monotonic(), 0))
        assert ready, output[-2000:]
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
        while output.count(b"[y,n,a,q,?] ") > answered:
            os.write(leader, b"y\n")
            answered += 1
    os.close(leader)
    code = process.wait(timeout=120)
    log.close()
    errors = (tmp_path / "stderr.txt").read_text()
    assert answered == 2, output[-2000:]
    assert "Not a terminal" not in errors + output.decode("utf-8", "replace")
    assert code == 0, errors
    assert "clip_gradients_unscaled" in (sample / "train_fabric.py").read_text()


def test_a_replayed_check_into_one_file_gives_the_same_bytes(sample: Path) -> None:
    """The replay of an unchanged check writes its noted chunks in order, each flushed: into
    one file (`> out 2>&1`) it gives the bytes the analysing run gave."""
    (sample / "train_fabric.py").write_text(
        (sample / "train_fabric.py")
        .read_text()
        .replace("max_norm=1.0)", "max_norm=1.0)  # noqa: ACF999")
    )
    env = {key: value for key, value in ENV.items() if key != "AMP_CLIPFIX_NO_CACHE"}
    runs = []
    for number in range(3):  # the first notes, the next ones replay
        both = sample.parent / f"both{number}.txt"
        with both.open("wb") as stream:
            done = subprocess.run(
                [sys.executable, "-m", "amp_clipfix", "check", "--lightning-version", "2.6.6", "."],
                stdout=stream,
                stderr=stream,
                cwd=sample,
                env=env,
                check=False,
            )
        assert done.returncode == 1
        runs.append(both.read_bytes())
    assert runs[0] == runs[1] == runs[2]
    assert list((sample / ".amp_clipfix_cache").glob("*/replay/*"))  # the run was noted
    assert b"warning: train_fabric.py:18: unknown code 'ACF999'" in runs[0]
    assert runs[0].startswith(b"model.py:21:76: ACF002 ")
