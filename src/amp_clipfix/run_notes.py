"""Whether this run may be noted for a replay (replay.py): the command says so when all it
printed follows from what it read, and anything that printed what time or the terminal decide
refuses it. Kept apart from replay.py, the entry point, so that the command line reports here
and imports point one way: replay -> cli -> run_notes."""

from __future__ import annotations

import atexit
import gc
import os
import sys

_allowed = False
_refused = False
_lasting_errors = False


def few_garbage_collections() -> None:
    """The syntax trees of a run are millions of objects that live to its end and hold no
    cycles; with the default thresholds the collector walks them again and again (half the
    time of a 5 MB module). A short-lived command collects seldom instead, from its start
    (the entry point asks before it imports the command line: with the default thresholds
    the imports of a small project's run were ~19 collections). At exit Python collects
    once more, walking every object still alive (~0.8 s of CPU after the searches on the
    Lightning repository); `gc.freeze` in an exit handler leaves them to the process's end
    instead (exit handlers run before that collection; the streams are flushed after)."""
    gc.set_threshold(100_000, 50, 1_000)
    atexit.unregister(gc.freeze)  # registered once however many commands a process runs
    atexit.register(gc.freeze)


def reset() -> None:
    """A new run (the entry point runs one per process; tests run several in one)."""
    global _allowed, _refused, _lasting_errors
    _allowed = _refused = _lasting_errors = False


def allow(lasting_errors: bool = False) -> None:
    """The command says its run may be replayed (a cached `check` reporting to stdout).
    `lasting_errors`: every error it reported is one the same noted answers give again (a
    file that does not parse), so its exit 2 may be replayed too."""
    global _allowed, _lasting_errors
    _allowed, _lasting_errors = True, lasting_errors


def refuse() -> None:
    """The run printed something its inputs do not decide (the time taken, a progress bar):
    it is never noted, whatever else allows it."""
    global _refused
    _refused = True


def may_note(code: int) -> bool:
    """Allowed, nothing refused it, and it ended with 0 or 1, or with 2 on lasting errors only
    (another exit 2 may come from what no question notes: a parsing process that died)."""
    return _allowed and not _refused and (code in (0, 1) or code == 2 and _lasting_errors)


def is_the_command() -> bool:
    """Whether the process runs amp-clipfix as its program: `python -m amp_clipfix`, or the
    `amp-clipfix` script the installer writes (`from amp_clipfix.replay import main`). Such a
    process ends once its one command has run; a program that runs commands itself (the
    tests) goes on."""
    program = sys.modules.get("__main__")
    if getattr(getattr(program, "__spec__", None), "name", None) == "amp_clipfix.__main__":
        return True
    entry = getattr(program, "main", None)
    script = os.path.basename(getattr(program, "__file__", None) or "")
    return (
        getattr(entry, "__module__", None) == "amp_clipfix.replay"
        and getattr(entry, "__name__", None) == "main"
        and script.startswith("amp-clipfix")
    )
