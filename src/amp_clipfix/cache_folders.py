"""The cache's folders and entries as files: each folder a plain folder of this user, reached
from the project's root without following a link, each name looked up relative to the open
folder (cache_layout.py says why). Standard library only: the replay reads its records through
here before anything else is imported."""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # importing typing would cost a replay ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable


def read_file(path: str | os.PathLike[str], limit: int, dir_fd: int | None = None) -> bytes | None:
    """A regular file of this user's with at most `limit` bytes: its bytes; None otherwise.
    Never follows a link in the last component and never waits on a pipe a repository planted.
    `dir_fd`: an open folder `path` is relative to (a `Folder`'s)."""
    flags = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | CLOEXEC
    flags |= getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags, dir_fd=dir_fd)
    except (OSError, ValueError):
        return None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or not _own(status) or status.st_size > limit:
            return None
        chunks, left = [], status.st_size
        while left > 0:
            chunk = os.read(handle, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(handle)


# -- the cache's folders: each a plain folder of this user, never reached through a link ---------

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC
# Every name below the project's root looked up relative to an open folder (openat and its
# kin): where the platform cannot (Windows), by path, each folder on the way checked with lstat.
BY_FOLDER = os.open in os.supports_dir_fd and os.scandir in os.supports_fd


def _own(status: os.stat_result) -> bool:
    """Made by this user (every file is, where there are no user ids)."""
    return not hasattr(os, "geteuid") or status.st_uid == os.geteuid()


def _plain(status: os.stat_result, kind: int) -> bool:
    """A plain folder or file (`kind`: stat.S_IFDIR, S_IFREG) of this user: not a link, a
    junction, a pipe or a device, whatever it leads to."""
    links = getattr(status, "st_reparse_tag", 0)  # a Windows junction or link
    return stat.S_IFMT(status.st_mode) == kind and not links and _own(status)


class Folder:
    """A folder of the cache, held open: the names in it are looked up relative to the open
    folder (`dir_fd`), so a link swapped in on the way after it was opened redirects nothing
    that is read, written or removed. `fd` None: by path (no dir_fd on this platform)."""

    def __init__(self, fd: int | None, path: str) -> None:
        self.fd, self.path = fd, path

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exception: object) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def at(self, name: str) -> str:
        return name if self.fd is not None else os.path.join(self.path, name)

    def status(self, name: str) -> os.stat_result | None:
        """What `name` is in the folder, the link itself for a link; None when absent."""
        try:
            return os.stat(self.at(name), dir_fd=self.fd, follow_symlinks=False)
        except (OSError, ValueError):
            return None

    def read(self, name: str, limit: int) -> bytes | None:
        return read_file(self.at(name), limit, dir_fd=self.fd)

    def names(self) -> list[str]:
        """The folder's names. Raises OSError."""
        with os.scandir(self.fd if self.fd is not None else self.path) as scan:
            return [entry.name for entry in scan]

    def write(self, name: str, data: bytes) -> None:
        """`name` holds `data` whole or not at all: written to a new temporary file and
        renamed over the name, so runs that share the cache never read half an entry. Never
        over anything but a plain file of this user. Raises OSError."""
        existing = self.status(name)
        if existing is not None and not _plain(existing, stat.S_IFREG):
            raise OSError(errno.EEXIST, "not a plain file of this user's")
        import contextlib  # only when writing: a replay reads

        temporary = f".tmp-{os.urandom(8).hex()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
        flags |= getattr(os, "O_BINARY", 0)
        handle = os.open(self.at(temporary), flags, 0o600, dir_fd=self.fd)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(self.at(temporary), self.at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(self.at(temporary), dir_fd=self.fd)
            raise

    def unlink(self, name: str) -> None:
        """Remove the name (a link itself, never what it leads to). Raises OSError."""
        os.unlink(self.at(name), dir_fd=self.fd)


def open_folder(
    root: str | os.PathLike[str], parts: list[str], create: bool = False
) -> Folder | None:
    """The folder `root/parts[0]/.../parts[-1]`, each of `parts` a plain folder of this user
    (made when missing and `create`), never a link, wherever it leads; None otherwise. The
    root itself is the project the user named, links and all."""
    if not BY_FOLDER:
        return _folder_by_path(os.fspath(root), parts, create)
    try:
        handle = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC)
    except (OSError, ValueError):
        return None
    for part in parts:
        try:
            child = _open_child(handle, part, create)
        except (OSError, ValueError):
            child = None
        os.close(handle)
        if child is None:
            return None
        handle = child
    return Folder(handle, os.path.join(root, *parts))


def _open_child(folder: int, name: str, create: bool) -> int | None:
    try:
        child = os.open(name, FOLDER_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        if not create:
            return None
        import contextlib  # only when writing: a replay reads

        with contextlib.suppress(FileExistsError):  # another run made it first
            os.mkdir(name, dir_fd=folder)
        child = os.open(name, FOLDER_FLAGS, dir_fd=folder)
    try:
        if _plain(os.fstat(child), stat.S_IFDIR):
            return child
    except OSError:
        pass
    os.close(child)
    return None


def _folder_by_path(root: str, parts: list[str], create: bool) -> Folder | None:
    path = root
    for part in parts:
        path = os.path.join(path, part)
        try:
            if create and not os.path.lexists(path):
                os.makedirs(path, exist_ok=True)  # another run may make it meanwhile
            status = os.lstat(path)
        except OSError:
            return None
        if not _plain(status, stat.S_IFDIR):
            return None
    return Folder(None, path)


class HeldFolder(Folder):
    """A folder of the cache held open across reads, closed when dropped (`Entries` holds the
    folder of the entries' shards: a run reads hundreds of entries there). As for any `Folder`,
    a link swapped in on the way after it was opened redirects nothing."""

    def __exit__(self, *exception: object) -> None:
        """Held: closed when dropped, not after each use."""

    def __del__(self, close: Callable[[int], None] = os.close) -> None:
        """`close` bound at definition: at interpreter exit this module's names may be gone."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            close(fd)

    def child(self, name: str) -> Folder | None:
        """The plain folder `name` of this one (one name, never `..`), opened; None when it
        is absent, a link, or not this user's."""
        if (
            name in ("", os.curdir, os.pardir)
            or os.sep in name
            or (os.altsep is not None and os.altsep in name)
        ):
            return None
        try:
            handle = _open_child(self.fd, name, create=False) if self.fd is not None else None
        except (OSError, ValueError):
            return None
        return None if handle is None else Folder(handle, os.path.join(self.path, name))
