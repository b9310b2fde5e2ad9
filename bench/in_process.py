"""A `check --no-cache --jobs 1 --format json FOLDER` run in this process, its report thrown
away: for the bench scripts that patch the tool's functions to count or time what a run asks."""

from __future__ import annotations

import contextlib
import gc
import sys


def check_quietly(folder: str, exits: bool = True) -> None:
    """Run the command on `folder` as the entry point does (`exits`: `replay.main`; else
    `replay._main`, which leaves the process to the caller: no `os._exit`). The garbage
    collector is off for the run and stays off after it, as in the command's own process
    (`running.execute` turns it on again only in a process that goes on): else the first
    allocation after the run collects everything the run made, in the caller's figures
    (0.09 s of ~1.0 s in process on the Lightning tree, 0.3 s on ColossalAI's)."""
    from amp_clipfix import replay

    gc.disable()
    sys.argv = ["amp-clipfix", "check", "--no-cache", "--jobs", "1", "--format", "json", folder]
    with contextlib.redirect_stdout(None), contextlib.suppress(SystemExit):
        (replay.main if exits else replay._main)()
