"""The kinds a run needs before anything is parsed: the fix strategies, the kinds of errors, a
file's error and which findings count. Kept apart from models.py, whose sites and findings
(dataclasses, made by the thousand) only a run that parses needs: a `check` with nothing to
find imports this module, not models.py.
"""

from __future__ import annotations

from enum import Enum

from amp_clipfix.records import record

TYPE_CHECKING = False  # importing typing would cost what this module saves
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Protocol, TypeVar

    class Counted(Protocol):
        """A finding, as far as counting it goes (models.py is a layer above)."""

        @property
        def suppressed(self) -> bool: ...

    F = TypeVar("F", bound=Counted)


class Strategy(str, Enum):
    AUTO = "auto"
    UNSCALE = "unscale"
    BF16 = "bf16"
    UNFUSE = "unfuse"
    GUARD = "guard"
    MIGRATE = "migrate"  # the spelling the target release accepts, same behaviour (ACF010-012)
    NATIVE = "native"  # apex AMP replaced by Lightning's native mixed precision (ACF010)


def active_findings(findings: Iterable[F]) -> list[F]:
    """The findings reported and counted: those no suppression comment silences."""
    return [finding for finding in findings if not finding.suppressed]


class ErrorKind(str, Enum):
    """Why a file could not be processed; machine output reports it beside path and message."""

    PATH = "path"  # a path given that cannot be used (missing, a link out of the project)
    READ = "read"  # cannot be read or decoded faithfully
    PARSE = "parse"  # does not parse
    FIX = "fix"  # a fix would not give a file that parses, or could not be made exactly
    WRITE = "write"  # writing failed, or the file changed on disk meanwhile
    INTERNAL = "internal"  # a bug of ours, kept to this one file


@record(frozen=True)
class FileError:
    """A problem with one file (or path); the run goes on with the others and exits 2."""

    path: Path | None
    message: str
    kind: ErrorKind
    line: int | None = None
    column: int | None = None
    cell: int | None = None
