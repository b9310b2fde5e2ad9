"""A `check --no-cache --jobs 1 --format json FOLDER` run in this process, its report thrown
away: for the bench scripts that patch the tool's functions to count or time what a run asks."""

from __future__ import annotations

import contextlib
import sys


def check_quietly(folder: str, exits: bool = True) -> None:
    """Run the command on `folder` as the entry point does (`exits`: `replay.main`; else
    `replay._main`, which leaves the process to the caller: no `os._exit`)."""
    from amp_clipfix import replay

    sys.argv = ["amp-clipfix", "check", "--no-cache", "--jobs", "1", "--format", "json", folder]
    with contextlib.redirect_stdout(None), contextlib.suppress(SystemExit):
        (replay.main if exits else replay._main)()
