"""Whether this run may be noted for a replay (replay.py): the command says so when all it
printed follows from what it read, and anything that printed what time or the terminal decide
refuses it. Kept apart from replay.py, the entry point, so that the command line reports here
and imports point one way: replay -> cli -> run_notes."""

from __future__ import annotations

_allowed = False
_refused = False


def reset() -> None:
    """A new run (the entry point runs one per process; tests run several in one)."""
    global _allowed, _refused
    _allowed = _refused = False


def allow() -> None:
    """The command says its run may be replayed (a cached `check` reporting to stdout)."""
    global _allowed
    _allowed = True


def refuse() -> None:
    """The run printed something its inputs do not decide (the time taken, a progress bar):
    it is never noted, whatever else allows it."""
    global _refused
    _refused = True


def may_note() -> bool:
    """Allowed, and nothing refused it."""
    return _allowed and not _refused
