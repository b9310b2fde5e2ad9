"""Replace a source file atomically, so that a crash or a full disk never leaves it half written.

The new bytes go to a temporary file in the same folder (same file system, so the final rename is
atomic), are flushed to disk, get the original permission bits, owner and extended attributes
(ACLs live there on Linux), and only then replace the file. A file that changed since it was
read is left alone rather than overwritten; a read-only file (no write bit for its owner) is
refused, since its owner said it is not to be changed; attributes that cannot be copied refuse
the write instead of being lost. SIGTERM or SIGHUP during a write removes the temporary file
before the process ends; a file rewritten in place (hard links) is never left half rewritten by
any signal (`signals_deferred`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.models import ErrorKind, FileError
from amp_clipfix.paths import display_path, excerpt, os_error_reason
from amp_clipfix.sources.text import SourceFile

if TYPE_CHECKING:  # only its type is named here
    from amp_clipfix.results import FileChange

TEMP_SUFFIX = ".amp-clipfix.tmp"
# The temporary name keeps a short prefix of the file's name: a name near the 255-byte limit
# must still leave room for the random part and the suffix.
TEMP_NAME_CHARS = 40
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class WriteError(Exception):
    """The file could not be replaced; the original is intact. str() is one line for the report."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def write_all(
    changes: Sequence[FileChange],
    roots: Mapping[Path, Path] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[list[FileChange], list[FileError]]:
    """Write every change, all or nothing across files: a file another change needs (the
    helper module the fixed files import from) is written first, and when it cannot be, none
    of the files that need it is written (each gets its own error line). `roots`: each file's
    project root, which no write may leave (through a link). `stop` is asked before each file
    (Ctrl-C: the write under way ends, no other begins). The changes written, the errors."""
    roots = roots or {}
    needed = {path for change in changes for path in change.requires}
    ordered = sorted(changes, key=lambda change: change.source.path not in needed)
    written: list[FileChange] = []
    failed: list[FileError] = []
    done: set[Path] = set()
    for change in ordered:
        if stop():
            break
        path = change.source.path
        missing = [required for required in change.requires if required not in done]
        try:
            if missing:
                raise WriteError(
                    f"not written: it needs {display_path(missing[0])}, which was not written"
                )
            _ensure_inside(path, roots.get(path))
            if change.created:
                create_atomic(path, change.new_data)
            else:
                write_atomic(change.source, change.new_data, change.keep_hard_links)
        except WriteError as error:
            failed.append(FileError(path, str(error), ErrorKind.WRITE))
            continue
        except Exception as error:  # noqa: BLE001 - a bug of ours: this file, the others go on
            message = excerpt(f"not written: internal error: {error!r}", 300, quoted=False)
            failed.append(FileError(path, message, ErrorKind.INTERNAL))
            continue
        written.append(change)
        done.add(path)
    return written, failed


def _ensure_inside(path: Path, root: Path | None) -> None:
    if root is not None and not observed.inside(path, root):
        raise WriteError("a link leads outside the project; not written")


def write_atomic(
    source: SourceFile, new_data: bytes, keep_hard_links: bool = False, root: Path | None = None
) -> None:
    """Replace the file read as `source` with `new_data`, or raise WriteError and change nothing.

    `keep_hard_links`: the file's other names all lie in the tree being fixed, so it is
    rewritten in place (after the new bytes are safe in a synced temp file) to stay linked.
    `root`: the project, which the file (every link on the way resolved) must lie in."""
    _ensure_inside(source.path, root)
    target = _write_target(source.path)
    _ensure_unchanged(target, source.data)
    try:
        original = os.stat(target)
    except OSError as error:
        raise WriteError(f"cannot write: {os_error_reason(error)}") from None
    if not original.st_mode & stat.S_IWUSR:
        mode = stat.S_IMODE(original.st_mode)
        raise WriteError(f"read-only file (mode {mode:04o}); not written")
    with _stop_signals_raise():
        _replace(target, source, new_data, original, keep_hard_links)
    _fsync_folder(target.parent)


def _replace(
    target: Path,
    source: SourceFile,
    new_data: bytes,
    original: os.stat_result,
    keep_hard_links: bool,
) -> None:
    try:
        handle, temp_name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name[:TEMP_NAME_CHARS]}.", suffix=TEMP_SUFFIX
        )
    except OSError as error:
        raise WriteError(f"cannot write: {os_error_reason(error)}") from None

    try:
        with os.fdopen(handle, "wb") as temp_file:
            temp_file.write(new_data)
            temp_file.flush()
            os.fsync(temp_file.fileno())
        _copy_owner(temp_name, original)
        os.chmod(temp_name, stat.S_IMODE(original.st_mode))
        _copy_xattrs(target, temp_name)
        # Checked again right before the swap to keep the window for a concurrent edit small.
        _ensure_unchanged(target, source.data)
        if keep_hard_links and original.st_nlink > 1:
            _rewrite_in_place(target, new_data, source.data)
            os.unlink(temp_name)
        else:
            os.replace(temp_name, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        if isinstance(error, OSError):
            raise WriteError(f"cannot write: {os_error_reason(error)}") from None
        raise


class _Stopped(BaseException):
    """A stop signal arrived while writing; raised so that the temp file is cleaned up."""


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """While a file is being replaced, SIGTERM and SIGHUP unwind the write (removing the temp
    file) and then end the process with the signal's usual exit status."""
    received: list[int] = []
    with _signals_caught(STOP_SIGNALS, received, stop=True), contextlib.suppress(_Stopped):
        yield
    if received:
        raise SystemExit(128 + received[0])


@contextlib.contextmanager
def _signals_caught(numbers: Sequence[int], received: list[int], stop: bool) -> Iterator[None]:
    """While the block runs, the signals `numbers` are noted in `received` (and, when `stop`,
    end the block: _Stopped is raised); the handlers they had come back after. Python runs
    signal handlers in the main thread only; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def caught(number: int, frame: object) -> None:
        received.append(number)
        if stop:
            raise _Stopped

    previous = {number: signal.signal(number, caught) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


def _copy_xattrs(target: Path, temp_name: str) -> None:
    """Give the new file the old one's extended attributes (POSIX ACLs, SELinux labels, macOS
    quarantine...). One that cannot be copied stops the write: it would be lost otherwise."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(target)
    except OSError:
        return  # the file system has no extended attributes
    try:
        inherited = set(os.listxattr(temp_name))
    except OSError:
        inherited = set()
    for name in names:
        try:
            value = os.getxattr(target, name)
            if name in inherited and os.getxattr(temp_name, name) == value:
                continue
            os.setxattr(temp_name, name, value)
        except OSError as error:
            raise OSError(
                error.errno, f"cannot keep extended attribute {name}: {os_error_reason(error)}"
            ) from None


def _rewrite_in_place(target: Path, new_data: bytes, old_data: bytes) -> None:
    """A file with several hard links keeps its inode, so that every name sees the fix (a
    rename would split them). The new bytes are already safe in the synced temp file. From the
    first write to the final size no signal ends it (`signals_deferred`), and should the
    in-place write fail in any way, the old bytes are put back: every name holds the old bytes
    or the new ones, never the new text followed by the old tail."""
    with signals_deferred():
        try:
            with open(_open_regular(target), "r+b") as file:
                file.write(new_data)
                file.truncate()
                file.flush()
                os.fsync(file.fileno())
        except BaseException:
            with contextlib.suppress(OSError), open(_open_regular(target), "r+b") as file:
                file.write(old_data)
                file.truncate()
            raise


def _open_regular(path: Path) -> int:
    """`path` opened for reading and writing, never waiting (a pipe swapped in meanwhile opens
    at once and is refused: observed.NotRegular). Raises OSError."""
    flags = os.O_RDWR | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path, flags | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise observed.NotRegular
        if hasattr(os, "set_blocking"):
            os.set_blocking(handle, True)
    except BaseException:
        os.close(handle)
        raise
    return handle


DEFERRED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGINT are noted while the block runs and delivered again once it is
    done, to the handlers they had (which may end the process then): a handler that raises, or
    a signal's default action, would otherwise stop a rewrite half way."""
    received: list[int] = []
    try:
        with _signals_caught(DEFERRED_SIGNALS, received, stop=False):
            yield
    finally:
        for number in dict.fromkeys(received):
            signal.raise_signal(number)


def _write_target(path: Path) -> Path:
    """The real file behind a symlink, so that replacing it keeps the link a link."""
    path = Path(path)
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def _ensure_unchanged(target: Path, expected: bytes) -> None:
    try:
        current = observed.read_file(target)  # a pipe swapped in meanwhile: never waited on
    except OSError as error:
        raise WriteError(f"cannot re-read before writing: {os_error_reason(error)}") from None
    if current != expected:
        raise WriteError("changed on disk since it was read; not written")


def _copy_owner(temp_name: str, original: os.stat_result) -> None:
    """Keep the file's owner and group when we may (e.g. running as root); best effort."""
    if not hasattr(os, "chown"):
        return
    created = os.stat(temp_name)
    if (created.st_uid, created.st_gid) == (original.st_uid, original.st_gid):
        return
    with contextlib.suppress(OSError):
        os.chown(temp_name, original.st_uid, original.st_gid)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; not every platform can open a folder, so best effort."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def create_atomic(path: Path, data: bytes, root: Path | None = None) -> None:
    """Create a new file (the helper module) with `data`, or raise WriteError and leave nothing:
    the bytes go to a synced temp file that is then linked to the name, which fails rather than
    replace a file that appeared meanwhile. Missing folders are made; mode 0644 less the umask.
    `root`: the project, which the new file (every link on the way resolved) must lie in."""
    _ensure_inside(path, root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WriteError(f"cannot create: {os_error_reason(error)}") from None
    _place_new(path, data, 0o644, os.link, "create")


def write_own_file(path: Path, data: bytes) -> None:
    """Write a file the run makes for the user (a `--patch-dir` patch), new or replacing one
    made before: atomically (a synced temp file renamed over the name), and never through a
    link. A name that is a symbolic link is refused (WriteError): writing through it would
    change the file it leads to, wherever that is, and replacing it would change what the
    user committed. Mode 0666 less the umask, as for any new file."""
    if os.path.islink(path):
        raise WriteError("is a symbolic link; not written through (it may lead anywhere)")
    # os.replace replaces the name itself: a link made there meanwhile is replaced, never
    # written through.
    _place_new(path, data, 0o666, os.replace, "write")


def write_output_file(path: Path, data: bytes) -> None:
    """A file the user named for the run's output (`-o`): it holds the whole of `data` or what
    it held before. A regular file (or a new name) gets the bytes through a synced temp file in
    its folder, renamed over it: a write that fails part way (a full disk, a quota, a file size
    limit) leaves the old file as it was. A link the user named is followed to the file it
    names (and stays a link). Anything else is written as it is: a terminal, a pipe or
    /dev/null, which must never be replaced, and `/dev/stdout` or `/proc/self/fd/N` (the file
    behind a descriptor the process holds, which a new file under its name would not be).
    Raises WriteError, one line that says what became of the file."""
    try:
        status: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise WriteError(f"cannot write: {os_error_reason(error)}; not written") from None
    target = _write_target(path)
    if status is not None and (_names_a_descriptor(path) or not _same_file(target, status)):
        try:
            with open(path, "wb") as stream:
                stream.write(data)
        except OSError as error:
            raise WriteError(f"cannot write: {os_error_reason(error)}") from None
        return
    mode = 0o666 if status is None else stat.S_IMODE(status.st_mode)
    try:
        _place_new(target, data, mode, os.replace, "write", exact=status is not None)
    except WriteError as error:
        kept = "nothing written" if status is None else "the old file is kept"
        raise WriteError(f"{error}; {kept}") from None


def _names_a_descriptor(path: Path) -> bool:
    """Whether `path`'s links lead through `/proc/` or `/dev/fd/`: the file behind a descriptor
    (`-o /dev/stdout > report.txt`), written in place, since the descriptor keeps the old file."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own bound on links followed
        if current.startswith(("/proc/", "/dev/fd/")):
            return True
        try:
            link = os.readlink(current)
        except (OSError, ValueError):
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return False


def _same_file(target: Path, status: os.stat_result) -> bool:
    """Whether `target` (a name's links resolved) is the regular file `status` describes."""
    if not stat.S_ISREG(status.st_mode):
        return False
    try:
        found = os.stat(target, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and (found.st_dev, found.st_ino) == (
        status.st_dev,
        status.st_ino,
    )


def _place_new(
    path: Path,
    data: bytes,
    mode: int,
    place: Callable[[str, Path], None],
    verb: str,
    exact: bool = False,
) -> None:
    """`data` in a synced temp file next to `path` (`mode`, less the umask unless `exact`),
    then `place`d at the name (os.link: only where it is free; os.replace: over it); the temp
    file never stays, a stop signal included."""
    try:
        handle, temp_name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name[:TEMP_NAME_CHARS]}.", suffix=TEMP_SUFFIX
        )
    except OSError as error:
        raise WriteError(f"cannot {verb}: {os_error_reason(error)}") from None
    with _stop_signals_raise():
        try:
            with os.fdopen(handle, "wb") as temp_file:
                temp_file.write(data)
                temp_file.flush()
                os.fsync(temp_file.fileno())
            if not exact:
                umask = os.umask(0)
                os.umask(umask)
                mode &= ~umask
            os.chmod(temp_name, mode)
            place(temp_name, path)
        except FileExistsError:
            raise WriteError(f"cannot {verb}: the file appeared meanwhile; not written") from None
        except OSError as error:
            raise WriteError(f"cannot {verb}: {os_error_reason(error)}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
    _fsync_folder(path.parent)
