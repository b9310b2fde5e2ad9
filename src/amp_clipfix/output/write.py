"""Replace a source file atomically, so that a crash or a full disk never leaves it half written.

The new bytes go to a temporary file in the same folder (same file system, so the final rename is
atomic), are flushed to disk, get the original permission bits, and only then replace the file.
A file that changed since it was read is left alone rather than overwritten.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from amp_clipfix.paths import os_error_reason
from amp_clipfix.sources.text import SourceFile

TEMP_SUFFIX = ".amp-clipfix.tmp"


class WriteError(Exception):
    """The file could not be replaced; the original is intact. str() is one line for the report."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def write_atomic(source: SourceFile, new_data: bytes, keep_hard_links: bool = False) -> None:
    """Replace the file read as `source` with `new_data`, or raise WriteError and change nothing.

    `keep_hard_links`: the file's other names all lie in the tree being fixed, so it is
    rewritten in place (after the new bytes are safe in a synced temp file) to stay linked."""
    target = _write_target(source.path)
    _ensure_unchanged(target, source.data)
    try:
        original = os.stat(target)
    except OSError as error:
        raise WriteError(f"cannot write: {os_error_reason(error)}") from None

    try:
        handle, temp_name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX
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
    _fsync_folder(target.parent)


def _rewrite_in_place(target: Path, new_data: bytes, old_data: bytes) -> None:
    """A file with several hard links keeps its inode, so that every name sees the fix (a
    rename would split them). The new bytes are already safe in the synced temp file; should
    the in-place write fail, the old bytes are put back."""
    try:
        with open(target, "r+b") as file:
            file.write(new_data)
            file.truncate()
            file.flush()
            os.fsync(file.fileno())
    except OSError:
        with contextlib.suppress(OSError), open(target, "r+b") as file:
            file.write(old_data)
            file.truncate()
        raise


def _write_target(path: Path) -> Path:
    """The real file behind a symlink, so that replacing it keeps the link a link."""
    path = Path(path)
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def _ensure_unchanged(target: Path, expected: bytes) -> None:
    try:
        current = target.read_bytes()
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
