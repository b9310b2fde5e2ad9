"""The replay of an unchanged `check`: its output again, without analysing anything.

A `check` whose output goes to no terminal (CI, pre-commit, an editor, a pipe) notes every
question it asks of the file system (observed.py: what a folder holds, which bytes a file has,
what git lists) and, when it ends with 0 or 1, its output and exit code, in the nearest cache
folder at or above the current folder. The same command line, from the same folder, with the
same environment and the same amp-clipfix, asks those questions again before anything else is
imported; when every answer is the same, so would the whole run be, and the noted output is
written instead. The
analysis itself stays cached by content hash (analysis/cache.py); this only saves starting it.

Standard library only, so that a replay costs little more than starting Python and reading the
files.
"""

from __future__ import annotations

import hashlib
import io
import marshal
import os
import sys

from amp_clipfix import __version__, observed
from amp_clipfix.cache_layout import FORMAT, stays_inside, version_folder, write_entry

TYPE_CHECKING = False  # importing typing (or contextlib) would cost a replay ~10 ms
if TYPE_CHECKING:
    from typing import IO

# Variables a shell changes between two runs of one command; every other one is part of the key.
VOLATILE_VARIABLES = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})

KEPT_RECORDS = 32  # the newest records of a cache folder; older ones are removed

Output = list[tuple[int, bytes]]  # (1 stdout or 2 stderr, bytes) in the order written

_allowed = False


def allow() -> None:
    """The command says its run may be replayed (a cached `check` reporting to stdout)."""
    global _allowed
    _allowed = True


def replayable(arguments: list[str]) -> bool:
    """A `check` reporting to no terminal, with the cache on."""
    return (
        arguments[:1] == ["check"]
        and hasattr(sys.stdout, "buffer")
        and hasattr(sys.stderr, "buffer")
        and not _is_terminal(sys.stdout)
        and not _is_terminal(sys.stderr)
        and not os.environ.get("AMP_CLIPFIX_NO_CACHE")
        and "--no-cache" not in arguments
    )


def _is_terminal(stream: IO[str] | None) -> bool:
    try:
        return stream is None or stream.isatty()
    except (AttributeError, ValueError):
        return True  # a replaced or closed stream: never replay into it


def run_key(arguments: list[str]) -> str:
    """What decides a run besides the file system: the command line, the current folder, the
    environment, the interpreter and its packages, and amp-clipfix's own files."""
    digest = hashlib.sha256()
    environment = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE_VARIABLES)
    current = os.getcwd()
    parts = [__version__, FORMAT, current, sys.executable, *arguments, "\0"]
    parts += [f"{name}={value}" for name, value in environment]
    parts += ["\0", *(f"{entry}:{_modified(entry, current)}" for entry in sys.path)]
    parts += _package_files(os.path.dirname(__file__))
    for part in parts:
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _modified(path: str, current: str) -> int:
    """When a folder of sys.path last changed: an install into site-packages changes it. Not the
    current folder's (`python -m` puts it first): the run's own cache folder changes it."""
    if path in ("", current):
        return 0
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _package_files(folder: str) -> list[str]:
    """Name, size and modification time of each of amp-clipfix's modules: an edited checkout
    (an editable install) never replays what older code printed."""
    found: list[str] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            found += _package_files(entry.path)
        elif entry.name.endswith((".py", ".json")):
            status = entry.stat()
            found.append(f"{entry.path}:{status.st_size}:{status.st_mtime_ns}")
    return found


def _cache_folders() -> list[str]:
    """This version's cache folders in the current folder and above it, nearest first: a run
    from inside a project keeps its cache in the project's root."""
    try:
        folder, found = os.getcwd(), []
    except OSError:  # the current folder was removed during the run
        return []
    while True:
        candidate = version_folder(folder)
        if os.path.isdir(candidate):
            found.append(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def _records(key: str) -> list[str]:
    return [os.path.join(folder, "replay", key) for folder in _cache_folders()]


def replay(key: str) -> int | None:
    """Write the noted output and return the exit code, when the record still holds."""
    records = [path for path in _records(key) if os.path.isfile(path)]
    if not records:
        return None
    try:
        with open(records[0], "rb") as file:
            answers, output, code = marshal.loads(file.read())
        if not (_is_output(output) and isinstance(code, int) and observed.still_answers(answers)):
            return None
    except (OSError, EOFError, ValueError, TypeError, AttributeError):  # not a record of ours
        return None
    for stream, data in output:  # buffered as the run's own writes were: stderr by the line
        if stream == 1:
            sys.stdout.buffer.write(data)
        else:
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
    return int(code)


def _is_output(output: object) -> bool:
    return isinstance(output, list) and all(
        isinstance(chunk, tuple) and len(chunk) == 2 and isinstance(chunk[1], bytes)
        for chunk in output
    )


def save(key: str, answers: dict[observed.Question, object], output: Output, code: int) -> None:
    """Note the run in the nearest cache at or above the current folder (the run made one when
    the current folder is in a project), when the command allowed it. Written whole or not at
    all."""
    caches = _cache_folders()
    if not _allowed or not caches:
        return
    folder = os.path.join(caches[0], "replay")
    if not stays_inside(os.path.dirname(os.path.dirname(caches[0])), folder):
        return
    try:
        write_entry(folder, key, marshal.dumps((answers, output, code)))
        _keep_newest(folder, KEPT_RECORDS)
    except (OSError, ValueError):  # ValueError: marshal refused a value
        return


def _keep_newest(folder: str, count: int) -> None:
    """Every command line has its record (pre-commit names other files at each commit): the
    oldest beyond `count` are removed, so the folder does not grow without end."""
    records = []
    for entry in os.scandir(folder):
        if not entry.name.startswith("."):
            try:
                records.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue
    for _, path in sorted(records, reverse=True)[count:]:
        try:
            os.unlink(path)
        except OSError:
            continue


class _Tee(io.BufferedIOBase):
    """A binary stream that passes everything to `target` and notes it in `output`."""

    def __init__(self, number: int, target: IO[bytes], output: Output) -> None:
        super().__init__()
        self.number, self.target, self.output = number, target, output

    @property
    def name(self) -> str:
        return str(getattr(self.target, "name", "<output>"))

    def writable(self) -> bool:
        return True

    def write(self, data: bytes, /) -> int:  # type: ignore[override]
        self.output.append((self.number, bytes(data)))
        self.target.write(data)
        return len(data)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.target.fileno()


class Captured:
    """stdout and stderr as they were, also noted in order (`output`) while it is entered."""

    def __init__(self) -> None:
        self.output: Output = []
        self.originals = sys.stdout, sys.stderr

    def __enter__(self) -> Output:
        sys.stdout, sys.stderr = (
            io.TextIOWrapper(
                _Tee(number, stream.buffer, self.output),
                encoding=stream.encoding,
                errors=stream.errors,
                line_buffering=bool(stream.line_buffering),
                write_through=True,
            )
            for number, stream in ((1, sys.stdout), (2, sys.stderr))
        )
        return self.output

    def __exit__(self, *exception: object) -> None:
        import contextlib  # only when noting

        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = self.originals


def main() -> None:
    """The `amp-clipfix` command: a replay when one holds, else the command line (cli.py)."""
    arguments = sys.argv[1:]
    if not replayable(arguments):
        return _command_line()
    try:
        key = run_key(arguments)
    except OSError:  # the current folder is gone: the command line says so
        return _command_line()
    code = replay(key)
    if code is not None:
        sys.exit(code)
    with observed.Recording() as seen, Captured() as output:
        try:
            _command_line()
        except SystemExit as end:
            if end.code in (0, 1, None):
                sys.stdout.flush()
                sys.stderr.flush()
                save(key, seen.answers, output, int(end.code or 0))
            raise


def _command_line() -> None:
    from amp_clipfix.cli import main as command_line

    command_line()
