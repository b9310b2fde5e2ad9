"""`amp-clipfix` run in this process the way its console entry point runs it, with stdout and
stderr piped (as in CI or pre-commit): the replay, the caches and the command line, compared
byte for byte, at the cost of a function call instead of a new interpreter."""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from amp_clipfix import replay
from amp_clipfix.cli import main as command_line


@dataclass(frozen=True)
class Run:
    stdout: bytes
    stderr: bytes
    code: int

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def amp_clipfix(folder: Path, *arguments: str, entry: bool = True) -> Run:
    """`amp-clipfix ARGUMENTS` from `folder`. `entry`: through the entry point, which replays an
    unchanged check and notes a new one; else the command line alone, which never replays (a
    check from a terminal: the per-file and collection caches only)."""
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.argv, sys.stdout, sys.stderr, os.getcwd()
    sys.argv = ["amp-clipfix", *arguments]
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(
        err, encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    os.chdir(folder)
    try:
        (replay.main if entry else command_line)()
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
        sys.argv, sys.stdout, sys.stderr = saved[:3]
        os.chdir(saved[3])
    return Run(stdout, stderr, code)
