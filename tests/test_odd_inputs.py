"""One odd file must cost one clear line, never a traceback, and never the rest of the run.

Each odd input sits next to a good file with a finding; the run must report the odd one in a
single `error:` line (or say nothing, when the input is valid but empty), still fix the good one,
and exit 2 when a file could not be processed. Odd files carry the word `fused` so that the byte
prefilter does not skip them before the parser ever sees them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import amp_clipfix.project.discover as discover_module
from amp_clipfix import observed
from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "fixtures" / "fabric_precision_kwarg_16_mixed" / "input" / "train.py").read_bytes()
# unfuse writes fused=False; ACF007 then passes error_if_nonfinite=False to Fabric's own clip
GOOD_FIXED = GOOD.replace(b"fused=True", b"fused=False").replace(
    b"max_norm=1.0)", b"max_norm=1.0, error_if_nonfinite=False)"
)


@dataclass(frozen=True)
class Odd:
    """A file the tool cannot process, and words its one error line must hold."""

    name: str
    data: bytes
    reason: str


ODD = [
    Odd(
        "syntax_error.py",
        b"import torch\nopt = torch.optim.AdamW(p, fused=True\ndef f(:\n    pass\n",
        ":3:1: error: cannot parse:",
    ),
    Odd(
        "unterminated.py",
        b'opt = torch.optim.AdamW(p, fused=True)\ns = """never closed\n',
        "cannot parse",
    ),
    Odd(
        "python2_print.py",
        b'import torch\nprint "x"\nopt = torch.optim.AdamW(p, fused=True)\n',
        ":2:1: error: cannot parse: Missing parentheses in call to 'print'",
    ),
    Odd(
        "python2_exec.py",
        b'exec "x = 1"\nopt = torch.optim.AdamW(p, fused=True)\n',
        ":1:",
    ),
    Odd(
        "python2_octal_and_backticks.py",
        b"x = 0777\nname = `x`\nopt = torch.optim.AdamW(p, fused=True)\n",
        ":1:",
    ),
    Odd(
        "inconsistent_tabs.py",
        b"if True:\n        x = 1\n\topt = torch.optim.AdamW(p, fused=True)\n",
        "cannot parse: inconsistent use of tabs and spaces",
    ),
    Odd(
        "undecodable.py",
        b"opt = torch.optim.AdamW(p, fused=True)  # caf\xe9 \xff\xfe\n",
        "cannot decode as utf-8 at byte 45",
    ),
    Odd(
        "wrong_cookie.py",
        b"# coding: ascii\nopt = torch.optim.AdamW(p, fused=True)  # caf\xc3\xa9\n",
        "cannot decode as ascii",
    ),
    Odd(
        "unknown_cookie.py",
        b"# coding: no-such-codec\nopt = torch.optim.AdamW(p, fused=True)\n",
        "unknown encoding: no-such-codec",
    ),
    Odd(
        "bom_and_latin1_cookie.py",
        b"\xef\xbb\xbf# coding: latin-1\nopt = torch.optim.AdamW(p, fused=True)\n",
        "bad encoding declaration",
    ),
    Odd(
        "binary.py",
        b"\x7fELF\x02\x01\x01\x00\x00\x00fused=True\x00\xff\xfe\x00",
        "binary file",
    ),
    Odd(
        "nul_in_text.py",
        b"opt = torch.optim.AdamW(p, fused=True)\n\x00\n",
        "binary file",
    ),
]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def lines_naming(result: Result, name: str) -> list[str]:
    return [line for line in result.output.splitlines() if name in line]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root holding `good.py` (one finding), as the current folder."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b"")
    (root / "good.py").write_bytes(GOOD)
    monkeypatch.chdir(root)
    return root


def assert_one_error_and_good_fixed(result: Result, project: Path, name: str, reason: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    named = lines_naming(result, name)
    assert len(named) == 1, result.output
    assert named[0].startswith(f"{name}:") and ": error: " in named[0], named
    assert reason in named[0], named
    assert (project / "good.py").read_bytes() == GOOD_FIXED


@pytest.mark.parametrize("how", ["folder", "named"])
@pytest.mark.parametrize("odd", ODD, ids=[odd.name for odd in ODD])
def test_apply_reports_odd_file_in_one_line_and_fixes_the_rest(
    project: Path, odd: Odd, how: str
) -> None:
    (project / odd.name).write_bytes(odd.data)
    paths = ["."] if how == "folder" else [odd.name, "good.py"]

    result = invoke("apply", "--yes", "--strategy", "unfuse", *paths)

    assert_one_error_and_good_fixed(result, project, odd.name, odd.reason)
    assert (project / odd.name).read_bytes() == odd.data


@pytest.mark.parametrize("odd", ODD[:1] + ODD[-2:], ids=lambda odd: odd.name)
def test_check_reports_odd_file_in_one_line_and_the_finding(project: Path, odd: Odd) -> None:
    (project / odd.name).write_bytes(odd.data)

    result = invoke("check", ".")

    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert len(lines_naming(result, odd.name)) == 1
    assert "good.py:19:9: ACF001" in result.output


def test_several_odd_files_each_get_their_line(project: Path) -> None:
    for odd in ODD:
        (project / odd.name).write_bytes(odd.data)

    result = invoke("apply", "--yes", "--strategy", "unfuse", ".")

    assert result.exit_code == 2
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if is_error_line(line)]
    assert sorted(errors) == sorted(
        next(line for line in errors if line.startswith(f"{odd.name}:")) for odd in ODD
    )
    assert (project / "good.py").read_bytes() == GOOD_FIXED


@pytest.mark.parametrize(
    "data",
    [b"", b"\xef\xbb\xbf", b"\n", b"\r\n", b"# fused\n", b"\x0c\n", b"   \n\n"],
    ids=["empty", "bom-only", "newline", "crlf", "comment-only", "form-feed", "blank"],
)
@pytest.mark.parametrize("how", ["folder", "named"])
def test_empty_files_are_valid_and_silent(project: Path, data: bytes, how: str) -> None:
    """An empty module is valid Python: no error, exit 0 once the good file is fixed."""
    (project / "empty.py").write_bytes(data)
    paths = ["."] if how == "folder" else ["empty.py", "good.py"]

    result = invoke("apply", "--yes", "--strategy", "unfuse", *paths)

    assert result.exit_code == 0, result.output
    assert "error:" not in result.output  # the word is in ACF007's `error_if_nonfinite`
    assert (project / "empty.py").read_bytes() == data
    assert (project / "good.py").read_bytes() == GOOD_FIXED


@pytest.mark.parametrize("how", ["folder", "named"])
def test_unreadable_file(project: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Simulated: the tests run as root, for whom permission bits do not stop a read."""
    locked = project / "locked.py"
    locked.write_bytes(GOOD)
    real_read_bytes = observed.read_bytes

    def read_bytes(path: Path) -> bytes:
        if Path(path).name == "locked.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read_bytes(path)

    monkeypatch.setattr(observed, "read_bytes", read_bytes)
    paths = ["."] if how == "folder" else ["locked.py", "good.py"]

    result = invoke("apply", "--yes", "--strategy", "unfuse", *paths)

    assert_one_error_and_good_fixed(result, project, "locked.py", "cannot read: Permission denied")
    assert locked.read_bytes() == GOOD


def test_unreadable_file_for_real(ordinary_user, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits, no simulation (as root, with the ids of an ordinary user)."""
    with ordinary_user as folder:
        project = folder / "project"
        project.mkdir()
        (project / "pyproject.toml").write_bytes(b"")
        (project / "good.py").write_bytes(GOOD)
        locked = project / "locked.py"
        locked.write_bytes(GOOD)
        locked.chmod(0)
        monkeypatch.chdir(project)
        result = invoke("apply", "--yes", "--strategy", "unfuse", ".")
        assert_one_error_and_good_fixed(result, project, "locked.py", "cannot read")
        locked.chmod(0o644)
        assert locked.read_bytes() == GOOD


def test_unreadable_folder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated like the unreadable file: a folder the walk cannot list."""
    (project / "locked").mkdir()
    (project / "locked" / "train.py").write_bytes(GOOD)
    real_scandir = os.scandir

    def scandir(path: object) -> object:
        if Path(str(path)).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(discover_module.os, "scandir", scandir)

    result = invoke("apply", "--yes", "--strategy", "unfuse", ".")

    assert result.exit_code == 2
    assert "Traceback" not in result.output
    named = lines_naming(result, "locked")
    assert len(named) == 1 and is_error_line(named[0]), result.output
    assert "Permission denied" in named[0]
    assert (project / "good.py").read_bytes() == GOOD_FIXED


@pytest.mark.parametrize("missing", ["missing.py", "no/such/folder", "missing_dir/"])
def test_path_that_does_not_exist(project: Path, missing: str) -> None:
    result = invoke("apply", "--yes", "--strategy", "unfuse", missing, "good.py")

    assert_one_error_and_good_fixed(
        result, project, missing.rstrip("/"), "no such file or directory"
    )


def test_broken_symlink_named(project: Path) -> None:
    (project / "dangling.py").symlink_to(project / "gone.py")

    result = invoke("apply", "--yes", "--strategy", "unfuse", "dangling.py", "good.py")

    assert_one_error_and_good_fixed(result, project, "dangling.py", "broken symbolic link")


def test_broken_symlink_in_a_folder_is_skipped(project: Path) -> None:
    (project / "dangling.py").symlink_to(project / "gone.py")

    result = invoke("apply", "--yes", "--strategy", "unfuse", ".")

    assert result.exit_code == 0, result.output
    assert (project / "good.py").read_bytes() == GOOD_FIXED


def test_fifo_named_py_is_never_read(project: Path) -> None:
    """A named pipe would block a reader forever; run in a subprocess with a timeout."""
    os.mkfifo(project / "pipe.py")
    os.mkdir(project / "sub")
    os.mkfifo(project / "sub" / "pipe.py")
    command = [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "--strategy", "unfuse"]

    named = subprocess.run(
        [*command, "pipe.py", "good.py"], capture_output=True, timeout=120, check=False
    )
    walked = subprocess.run([*command, "sub"], capture_output=True, timeout=120, check=False)

    assert named.returncode == 2, named.stderr
    assert b"pipe.py: error: not a regular file or directory" in named.stderr
    assert b"Traceback" not in named.stderr
    assert (project / "good.py").read_bytes() == GOOD_FIXED
    assert walked.returncode == 0, walked.stderr


def test_folder_without_python_does_not_stop_the_run(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_bytes(b"# fused\n")

    result = invoke("apply", "--yes", "--strategy", "unfuse", "docs", "good.py")

    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert (project / "good.py").read_bytes() == GOOD_FIXED


def test_folder_without_python_gets_one_line(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_bytes(b"# fused\n")

    result = invoke("apply", "--yes", "--strategy", "unfuse", "docs", "good.py")

    assert len(lines_naming(result, "docs")) == 1, result.output
    assert result.exit_code == 0


def deeply_nested(depth: int) -> bytes:
    nested = b"(" * depth + b"True" + b")" * depth
    return b"import torch\nopt = torch.optim.AdamW([], fused=" + nested + b")\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_deeply_nested_code_is_one_line(project: Path, jobs: str) -> None:
    """Run in a subprocess: the crash takes the whole interpreter down."""
    (project / "deep.py").write_bytes(deeply_nested(3000))
    # Enough candidate bytes (> 512 KiB) for the process pool to be used with -j 2.
    for index in range(6):
        (project / f"filler{index}.py").write_bytes(b"# fused\n" + b"x = 1\n" * 20_000)

    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "-j", jobs, "--strategy", "unfuse"],
        capture_output=True,
        timeout=300,
        check=False,
        cwd=project,
    )

    assert result.returncode == 2, result.returncode
    assert b"Traceback" not in result.stderr
    assert b"deep.py:" in result.stderr and b": error: " in result.stderr
    assert (project / "good.py").read_bytes() == GOOD_FIXED
