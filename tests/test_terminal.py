"""`amp-clipfix` on a real terminal: each test runs the command under a pseudo-terminal and
answers what it asks, the way a person at a keyboard does (Ctrl-C is the byte 0x03, which the
terminal turns into SIGINT for the whole foreground process group).

No sleeps: the terminal is read until the expected text shows or the process ends, with a bound.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from amp_clipfix.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample_project"
QUESTION = b"[y,n,a,q,?] "
BOUND = 120.0  # seconds a step may take on a loaded machine before the test gives up
HELP = "a - write this file and all the remaining ones"


class Terminal:
    """A command on a pseudo-terminal of `columns` columns (stdin, stdout and stderr), with
    the terminal as its controlling terminal."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        columns: int = 120,
        env: dict[str, str] | None = None,
    ) -> None:
        self.leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        environment = {**os.environ, "TERM": "xterm", "COLUMNS": str(columns), "LINES": "40"}
        for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
            environment.pop(name, None)
        environment.update(env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "amp_clipfix", *args],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            cwd=cwd,
            env=environment,
            preexec_fn=self._take_terminal,
        )
        os.close(follower)
        self.output = b""
        self.seen = 0  # how much of the output the last wait_for consumed

    @staticmethod
    def _take_terminal() -> None:  # in the child: a session whose controlling terminal is ours
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # Ctrl-C as a shell starts a command with it: whatever the test process's own
        # disposition of SIGINT is at this moment (an ignored one would be inherited).
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    def _read(self, deadline: float) -> bool:
        """Read what is there (waiting at most until `deadline`); False once it is closed."""
        ready, _, _ = select.select([self.leader], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            raise AssertionError(f"no output in time; so far: {self.output[-2000:]!r}")
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # the other side closed: the process is gone
            return False
        self.output += chunk
        return bool(chunk)

    def wait_for(self, text: bytes) -> None:
        """Read until `text` appears after what was already waited for."""
        deadline = time.monotonic() + BOUND
        while text not in self.output[self.seen :]:
            if not self._read(deadline):
                raise AssertionError(f"ended before {text!r}: {self.output[-2000:]!r}")
        self.seen = self.output.index(text, self.seen) + len(text)

    def send(self, data: bytes) -> None:
        os.write(self.leader, data)

    def finish(self) -> tuple[int, str]:
        """Read to the end; the exit code and the text seen, escape sequences removed."""
        deadline = time.monotonic() + BOUND
        while self._read(deadline):
            pass
        os.close(self.leader)
        code = self.process.wait(timeout=BOUND)
        return code, screen(self.output.decode("utf-8", "replace"))


CONTROL_SEQUENCE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07]*\x07|[\r\n]|[^\x1b\r\n]+")


def screen(output: str) -> str:
    """What a person sees once the output has run through a terminal: rich's transient
    progress bar erases its line (CR, erase line, cursor up), so only the carriage return,
    line feed, erase-line and cursor-up sequences are played; colours are dropped. Lines are
    kept as long as they are written (the terminal would wrap them)."""
    lines = [""]
    row = column = 0
    for match in CONTROL_SEQUENCE.finditer(output):
        text = match.group()
        if text == "\r":
            column = 0
        elif text == "\n":
            row += 1
            column = 0
            if row == len(lines):
                lines.append("")
        elif match.group(2) == "K":
            lines[row] = lines[row][:column]
        elif match.group(2) == "A":
            row = max(row - int(match.group(1) or 1), 0)
        elif not text.startswith("\x1b"):
            line = lines[row].ljust(column)
            lines[row] = line[:column] + text + line[column + len(text) :]
            column += len(text)
    return "\n".join(line.rstrip() for line in lines)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The sample project with a third file to fix, and what `apply --yes` makes of it."""
    project = tmp_path / "work" / "sample_project"
    shutil.copytree(SAMPLE, project)
    shutil.copy(project / "train_fabric.py", project / "train_fabric2.py")
    fixed = tmp_path / "fixed"
    shutil.copytree(tmp_path / "work", fixed)
    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "--no-cache", "sample_project"],
        cwd=fixed,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return tmp_path


FILES = ("model.py", "train_fabric.py", "train_fabric2.py")  # the order they are asked in


def state(work: Path) -> dict[str, str]:
    """Per file: `fixed`, `unchanged`, or `other` (neither)."""
    result = {}
    for name in FILES:
        now = (work / "work" / "sample_project" / name).read_bytes()
        if now == (work / "fixed" / "sample_project" / name).read_bytes():
            result[name] = "fixed"
        elif now == (SAMPLE / name.replace("2.py", ".py")).read_bytes():
            result[name] = "unchanged"
        else:
            result[name] = "other"
    return result


def answer(terminal: Terminal, *answers: bytes) -> None:
    for reply in answers:
        terminal.wait_for(QUESTION)
        terminal.send(reply)


def test_each_file_is_its_own_choice(work: Path) -> None:
    """y writes this file, n skips it; an unknown answer and ? print the help and ask again."""
    terminal = Terminal(["apply", "--no-cache", "sample_project"], work / "work")
    answer(terminal, b"y\n", b"maybe\n", b"?\n", b"n\n", b"y\n")
    code, text = terminal.finish()
    assert state(work) == {
        "model.py": "fixed",
        "train_fabric.py": "unchanged",
        "train_fabric2.py": "fixed",
    }
    assert code == 1, text  # a fix is left unapplied
    assert text.count(HELP) == 2
    questions = re.findall(r"\((\d)/3\) Write sample_project/(\S+)\? \[y,n,a,q,\?\]", text)
    assert questions == [
        ("1", "model.py"),
        ("2", "train_fabric.py"),
        ("2", "train_fabric.py"),
        ("2", "train_fabric.py"),
        ("3", "train_fabric2.py"),
    ]
    assert "Fixed 2 files." in text
    assert "Left unwritten, fixes not applied: 1 file (sample_project/train_fabric.py)." in text
    assert "2 files written, 1 left unwritten" in text  # the summary table
    # on a terminal each file's diff comes right before its own question
    before_second = text[: text.index("(2/3) Write")]
    assert "+def clip_module_gradients_unscaled(" in before_second
    assert "+def clip_gradients_unscaled(" in before_second[before_second.index("(1/3)") :]


@pytest.mark.parametrize(
    ("answers", "written", "code", "said"),
    [
        ((b"n\n", b"a\n"), (False, True, True), 1, "Left unwritten, fixes not applied: 1 file"),
        ((b"a\n",), (True, True, True), 0, "Fixed 3 files."),
        ((b"y\n", b"q\n"), (True, False, False), 1, "Left unwritten, fixes not applied: 2 files"),
        ((b"\x04",), (False, False, False), 1, "Nothing written."),  # Ctrl-D: as q
    ],
    ids=["n-then-a", "a-at-once", "y-then-q", "end-of-input"],
)
def test_a_writes_the_rest_and_q_writes_nothing_more(
    work: Path, answers: tuple[bytes, ...], written: tuple[bool, ...], code: int, said: str
) -> None:
    terminal = Terminal(["apply", "--no-cache", "sample_project"], work / "work")
    answer(terminal, *answers)
    exit_code, text = terminal.finish()
    expected = {name: "fixed" if done else "unchanged" for name, done in zip(FILES, written)}
    assert state(work) == expected
    assert exit_code == code, text
    assert said in text
    assert text.count("Write sample_project/") == len(answers)  # none asked after a or q


def interrupted_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "interrupted" in line]


def test_ctrl_c_at_the_prompt_exits_130_with_nothing_written(work: Path) -> None:
    terminal = Terminal(["apply", "--no-cache", "sample_project"], work / "work")
    answer(terminal, b"y\n", b"\x03")  # the first file was chosen, but nothing is written yet
    code, text = terminal.finish()
    assert code == 130, text
    assert set(state(work).values()) == {"unchanged"}
    assert interrupted_lines(text) == ["amp-clipfix: interrupted (Ctrl-C): nothing written."]
    after = text[text.index("(2/3) Write") :].splitlines()[1:]
    assert [line for line in after if line.strip()] == interrupted_lines(text)
    assert "Traceback" not in text and "Aborted" not in text


# Ctrl-C at the very instant the prompt starts to wait. The kernel runs SIGINT's C handler,
# which only notes the signal (and writes to signal.set_wakeup_fd's pipe); Python raises
# KeyboardInterrupt at its next bytecode, or when an interrupted call returns. A signal that
# lands after the prompt's last bytecode and before its read is blocked (a person pressing
# Ctrl-C as the question appears; a loaded machine pausing the process right there: 1 run in
# ~50 of the test above) interrupts nothing: the read waits on. `_thread.interrupt_main()` puts
# a process in exactly that state, so the moment can be chosen: with a switch interval of
# days, the thread that presses runs only while the prompt's thread waits inside a call it
# made, and it presses once the question is on the screen and the prompt's own code (not the
# echo's write) is that caller.
AT_THE_INSTANT = f"""
import _thread, os, signal, sys, threading
from amp_clipfix import writing

# Ctrl-C as a terminal's shell leaves it: a suite run as a background job without job control
# starts every child with SIGINT ignored, and interrupt_main() then does nothing
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.setswitchinterval(1e6)
leader, follower = os.openpty()
sys.stdin = open(follower, "r", closefd=False)
sys.stderr = open(follower, "w", closefd=False)
prompt = threading.main_thread().ident
ended, typed = threading.Event(), threading.Event()


def press_ctrl_c() -> None:
    shown = b""
    while {QUESTION!r} not in shown:
        shown += os.read(leader, 1024)
    while sys._current_frames()[prompt].f_code.co_filename != writing.__file__:
        os.sched_yield()  # the echo's write is still under way
    _thread.interrupt_main()
    if not ended.wait({BOUND}):  # the prompt waits on: type a line, so that the test ends
        typed.set()
        os.write(leader, b"n\\n")


threading.Thread(target=press_ctrl_c, daemon=True).start()
try:
    answer = writing.ask("(1/1) Write train.py? [y,n,a,q,?] ")
except KeyboardInterrupt:
    answer = "interrupted"
ended.set()
print(answer + (" once a line was typed" if typed.is_set() else ""))
"""


def test_ctrl_c_as_the_prompt_begins_to_wait_is_not_lost() -> None:
    result = subprocess.run(
        [sys.executable, "-c", AT_THE_INSTANT],
        capture_output=True,
        text=True,
        timeout=2 * BOUND,
        check=False,
    )
    assert (result.stdout, result.returncode) == ("interrupted\n", 0), result.stderr


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """A project that takes a while to analyse: 300 modules with a finding each."""
    project = tmp_path / "big"
    project.mkdir()
    padding = "".join(f"values_{k} = [{k}, {k + 1}, {k + 2}]\n" for k in range(200))
    code = (SAMPLE / "train_fabric.py").read_text() + padding
    for number in range(300):
        (project / f"module_{number}.py").write_text(code)
    return project


@pytest.mark.parametrize("command", ["check", "apply"])
def test_ctrl_c_during_analysis_exits_130_without_a_traceback(big: Path, command: str) -> None:
    before = {path.name: path.read_bytes() for path in big.iterdir()}
    terminal = Terminal([command, "--no-cache", "--jobs", "2", "big"], big.parent)
    terminal.wait_for(b"files")  # the progress bar is up: analysis has begun
    terminal.send(b"\x03")
    code, text = terminal.finish()
    assert code == 130, text[-2000:]
    assert interrupted_lines(text) == ["amp-clipfix: interrupted (Ctrl-C): nothing written."]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert "Aborted" not in text
    assert {path.name: path.read_bytes() for path in big.iterdir()} == before


def test_the_progress_bar_counts_every_file_it_looks_at(tmp_path: Path) -> None:
    """30 files that cannot matter (the prefilter drops them unparsed) count as much as the
    parsed ones; while files are still being found there is no `0/0`."""
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project)
    for number in range(30):
        (project / f"plain_{number}.py").write_text(f"VALUE = {number}\n")
    files = len(list(project.glob("*.py")))
    # the bar shows only for runs longer than a second: here from the start
    env = {"AMP_CLIPFIX_PROGRESS_AFTER": "0"}
    terminal = Terminal(["check", "--no-cache", "sample_project"], tmp_path, env=env)
    code, text = terminal.finish()
    assert code == 1
    frames = terminal.output.decode()  # the bar's frames, which the screen no longer shows
    counts = re.findall(r"(\d+)/(\d+) files", frames)
    assert counts and {total for _, total in counts} == {str(files)}, counts
    assert (str(files), str(files)) in counts
    assert not re.search(r"\b0/0\b", frames)
    assert "files parsed" in text  # the summary still says how few were parsed


def test_wall_time_leaves_out_the_time_at_the_prompt(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person who takes 1000 s to answer: the summary's wall time is the tool's own."""
    waited = [0.0]
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + waited[0])

    class SlowPerson(io.BytesIO):
        """Answers `a`, but only 1000 s after being asked (on the clock the tool reads)."""

        def read(self, size: int | None = -1) -> bytes:
            waited[0] += 1000.0
            return super().read(size)

        def read1(self, size: int = -1) -> bytes:
            waited[0] += 1000.0
            return super().read1(size)

    monkeypatch.setattr("amp_clipfix.cli.is_interactive", lambda: True)
    monkeypatch.chdir(work / "work")
    result = CliRunner().invoke(
        main, ["apply", "-v", "--no-cache", "sample_project"], input=SlowPerson(b"a\n")
    )
    assert result.exit_code == 0, result.output
    assert waited[0] >= 1000.0
    shown = re.sub(r"\x1b\[[0-9;]*m", "", result.output)  # a console cached by an earlier test
    found = re.findall(r"wall time\s*│?\s*([\d.]+) s", shown)
    assert len(found) == 1, result.output
    (seconds,) = found
    assert float(seconds) < 1000.0, result.output


@pytest.mark.parametrize("columns", [60, 40])
def test_narrow_terminal_folds_diff_rows_under_the_gutter(tmp_path: Path, columns: int) -> None:
    """No diff row is wider than the terminal: a long line is folded onto rows with a blank
    gutter, so the terminal never wraps code into the line numbers, and the pieces read back
    as the line."""
    shutil.copytree(SAMPLE, tmp_path / "sample_project")
    view = Terminal(["apply", "--dry-run", "--no-cache", "sample_project"], tmp_path, columns)
    code, text = view.finish()
    assert code == 1
    rows = [line for line in text.splitlines() if re.match(r"^[ \d]+ [+\- ]", line)]
    assert rows
    too_wide = [row for row in rows if cell_len(row) > columns]
    assert not too_wide, too_wide
    long_line = '    parameters = [p for group in inner.param_groups for p in group["params"]]'
    gutter = re.compile(r"^(\s*\d+\s+|\s+)\+")
    joined = "".join(gutter.sub("", row, count=1) for row in rows)
    assert long_line.replace(" ", "") in joined.replace(" ", "")  # a fold may fall on a space
    # the summary and per-project tables fit as well, and no cell is cut short to "…": too
    # narrow for its columns, the per-project table is one block of lines per project
    tables = [line for line in text.splitlines() if re.search("[│┃─━┌└]", line)]
    assert all(cell_len(line) <= columns for line in tables), tables
    assert "…" not in text
    assert re.search(r"^\s+Lightning\s+2\.6\.6$", text, re.M), text[-800:]


def test_no_color_on_a_terminal_gets_no_raw_escape_from_file_text(tmp_path: Path) -> None:
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project)
    code = (project / "train_fabric.py").read_text()
    code = code.replace("  # fused for speed", "  # \x1b]0;pwned\x07\x1b[2J")
    (project / "train_fabric.py").write_text(code)
    terminal = Terminal(
        ["apply", "--dry-run", "--strategy", "unfuse", "--no-cache", "sample_project"],
        tmp_path,
        env={"NO_COLOR": "1"},
    )
    terminal.finish()
    assert b"\x1b]0;" not in terminal.output and b"\x1b[2J" not in terminal.output
    assert b"\\x1b]0;pwned\\x07" in terminal.output


CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


@pytest.mark.parametrize("output_format", ["text", "json", "sarif", "rdjson", "gitlab", "github"])
def test_file_names_with_control_characters_never_reach_the_output_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output_format: str
) -> None:
    """An escape sequence, a C1 control and a newline in file names: every report escapes
    them, and a GitHub annotation never names a file that is not the one with the finding."""
    project = tmp_path / "p"
    project.mkdir()
    code = (SAMPLE / "train_fabric.py").read_bytes()
    names = ["x\x1b[2K\rtrain.py", "y\u009bz.py", "line\nbreak.py", "train.py"]
    for name in names[:3]:
        (project / name).write_bytes(code)
    (project / "train.py").write_text("VALUE = 1\n")  # what a stripped name would point at
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", output_format, "p"])
    assert result.exit_code == 1, result.output
    everything = result.stdout_bytes + result.stderr_bytes
    assert not CONTROL.search(everything), CONTROL.findall(everything)
    if output_format == "github":
        annotations = result.stdout.splitlines()
        # each file's fp16 clip by norm: ACF001 and ACF007 on the same call
        assert len(annotations) == 6
        assert sorted(line.split("::")[1] for line in annotations) == [
            "error title=ACF001",
            "error title=ACF001",
            "error title=ACF001",
            "error title=ACF007",
            "error title=ACF007",
            "error title=ACF007",
        ]
        assert all("file=" not in line for line in annotations)


@pytest.mark.parametrize("reply", ["y", "n"])
def test_the_helper_module_goes_with_the_file_that_imports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: str
) -> None:
    """Only the file is asked about; its helper module is written with it (first), or not at
    all: never one without the other."""
    case = REPO / "fixtures" / "trainer_unscale_helper_module_created"
    shutil.copytree(case / "input", tmp_path / "p")
    monkeypatch.setattr("amp_clipfix.cli.is_interactive", lambda: True)
    monkeypatch.chdir(tmp_path / "p")
    args = ["apply", "--no-cache", "--strategy", "unscale", "--lightning-version", "2.6.6", "."]
    result = CliRunner().invoke(main, args, input=f"{reply}\n")
    assert re.findall(r"\(\d/\d\) Write (\S+)\?", result.output) == ["mypkg/model.py"]
    helper = tmp_path / "p" / "mypkg" / "amp_helpers.py"
    model = (tmp_path / "p" / "mypkg" / "model.py").read_bytes()
    if reply == "y":
        assert result.exit_code == 0, result.output
        assert helper.read_bytes() == (case / "expected" / "mypkg" / "amp_helpers.py").read_bytes()
        assert model == (case / "expected" / "mypkg" / "model.py").read_bytes()
    else:
        assert result.exit_code == 1, result.output
        assert not helper.exists()
        assert model == (case / "input" / "mypkg" / "model.py").read_bytes()


def test_a_helper_module_that_cannot_be_written_keeps_its_importers_unwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only helper module is refused: the file that would import from it is not
    written either (it would fail with ImportError), and both say so."""
    case = REPO / "fixtures" / "fabric_unscale_helper_module_updated"
    shutil.copytree(case / "input", tmp_path / "p")
    helper = tmp_path / "p" / "tools" / "amp.py"
    helper.chmod(0o444)
    monkeypatch.chdir(tmp_path / "p")
    args = ["apply", "--yes", "--no-cache", "--strategy", "unscale", "--lightning-version", "2.6.6"]
    result = CliRunner().invoke(main, [*args, "."])
    assert result.exit_code == 2, result.output
    assert (tmp_path / "p" / "train.py").read_bytes() == (case / "input" / "train.py").read_bytes()
    assert helper.read_bytes() == (case / "input" / "tools" / "amp.py").read_bytes()
    assert "train.py: error: not written: it needs tools/amp.py, which was not written" in (
        result.stderr
    )
