"""The `amp-clipfix` process ends with `os._exit` once its output is flushed (replay.main): the
report and the exit code are those of a normal exit, and a program that calls `main()` itself
goes on after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "trainer_factory_other_module_unfuse"
)


def run(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AMP_CLIPFIX_NO_CACHE": "1", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=FIXTURE / "input",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


PROGRAM = (
    "import sys\n"
    "from amp_clipfix.replay import main\n"
    "sys.argv = ['amp-clipfix', 'check', '--no-cache', '.']\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as end:\n"
    "    print('after main', end.code)\n"
)


def test_the_command_prints_the_report_of_a_normal_exit_and_its_code() -> None:
    """`python -m amp_clipfix` ends at once; a program calling `main()` ends normally after
    it: the same report, the same code."""
    command = run(["-m", "amp_clipfix", "check", "--no-cache", "."])
    program = run(["-c", PROGRAM])
    assert command.returncode == 1
    assert command.stdout.startswith("optim.py:5:51: ACF002 Trainer clips gradients")
    assert command.stdout.splitlines()[-1].startswith("1 finding (1 fixable")
    assert program.returncode == 0
    assert program.stdout == command.stdout + "after main 1\n"
    assert program.stderr == command.stderr
