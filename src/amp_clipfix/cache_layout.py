"""Where the cache lives and what makes an entry trusted, shared by the per-file cache
(analysis/cache.py) and the replay of unchanged runs (replay.py).

The folder is `.amp_clipfix_cache/v<version>-<format>/` in a project's root, so a repository can
bring one (committed with `git add -f`, or in a tarball). A cache is an optimisation, never a
source of truth, so an entry is believed only when:

- its name (key) holds everything its value depends on: the tool's build (the bytes of its own
  modules), the interpreter, its packages (`fingerprint`), and the inputs and settings the
  caller adds;
- it is sealed with this user's own secret (`secret`: 32 random bytes in the user's cache folder,
  outside every project), over its name and its value: an entry made on another machine, by
  another user, for another name, or changed by one byte is a miss before anything unpickles it;
- it is a regular file of a bounded size, read without following a link.

A cache folder that git tracks is never written (`tracked`): a check never changes a file of the
checkout. Standard library only: the replay asks all this before anything else is imported.
"""

from __future__ import annotations

import os
import stat
import sys

from amp_clipfix import __version__
from amp_clipfix.observed import CACHE_DIR

TYPE_CHECKING = False  # importing typing would cost a replay ~10 ms
if TYPE_CHECKING:
    import hashlib

FORMAT = "4"  # bump when the cached data's shape (or what a run computes from it) changes

SECRET_BYTES = 32
SEAL = b"acfc4"  # a sealed entry starts with it, then the 32-byte tag, then the value
TAG_BYTES = 32
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # larger values are never written, so never read either


def version_folder(root: str | os.PathLike[str]) -> str:
    """This version's folder of the cache in `root`; other versions' folders are left alone."""
    return os.path.join(root, CACHE_DIR, f"v{__version__}-{FORMAT}")


def stays_inside(root: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether writing into `folder` (which may not exist yet) writes inside `root`: a cache
    folder (or one of its subfolders) that a repository brings as a symbolic link to elsewhere
    is never written through."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(folder)
    return real == real_root or real.startswith(os.path.join(real_root, ""))


def write_entry(folder: str | os.PathLike[str], name: str, data: bytes) -> None:
    """`folder/name` holds `data` whole or not at all: written to a temporary file and renamed
    into place, so runs that share the cache never read half an entry. Raises OSError."""
    import tempfile  # only when writing: a replay reads

    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, os.path.join(folder, name))
    except OSError:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# -- what an answer depends on besides its inputs ------------------------------------------------

_fingerprints: dict[tuple[object, ...], str] = {}


def fingerprint() -> str:
    """The tool build and the interpreter a run's answers come from: amp-clipfix's version and
    cache format, the sha256 of every module of the package (an edited checkout keeps its
    version string, its sizes and even its modification times), the interpreter (3.12 parses
    what 3.11 cannot), and each sys.path folder with its modification time (installing or
    upgrading a package changes it). Once per process and interpreter state."""
    package = os.path.dirname(os.path.abspath(__file__))
    try:
        current = os.getcwd()
    except OSError:
        current = ""
    state = (sys.version, sys.executable, tuple(sys.path), current, package)
    known = _fingerprints.get(state)
    if known is None:
        import hashlib  # here: a run without the cache never hashes

        digest = hashlib.sha256()
        parts = [__version__, FORMAT, sys.version, sys.implementation.cache_tag or ""]
        parts.append(sys.executable)
        parts += [f"{entry}:{_modified(entry, current)}" for entry in sys.path]
        for part in parts:
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        _hash_sources(package, "", digest)
        known = _fingerprints[state] = digest.hexdigest()
    return known


def _modified(path: str, current: str) -> int:
    """When a folder of sys.path last changed. Not the current folder's (`python -m` puts it
    first): the run's own cache folder changes it."""
    if path in ("", current):
        return 0
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _hash_sources(folder: str, relative: str, digest: hashlib._Hash) -> None:
    """Each module's (and package data file's) relative name and bytes, in name order."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        name = f"{relative}{entry.name}"
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            _hash_sources(entry.path, f"{name}/", digest)
        elif entry.name.endswith((".py", ".json")):
            try:
                with open(entry.path, "rb") as file:
                    data = file.read()
            except OSError:
                data = b"\0unreadable"
            digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            digest.update(data)


# -- whose entries are believed ------------------------------------------------------------------

_secrets: dict[str, bytes | None] = {}


def secret_path() -> str | None:
    """This user's secret, in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`;
    `%LOCALAPPDATA%` on Windows); None when there is no such folder."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not base or not os.path.isabs(base):
        return None
    return os.path.join(base, "amp-clipfix", "secret")


def secret(root: str | os.PathLike[str], create: bool = False) -> bytes | None:
    """The key that seals the entries of the cache in project `root`; None (the cache is then
    neither read nor written) when it cannot be had, or when it lies inside that project (a
    `XDG_CACHE_HOME` in the checkout would let the repository bring the key with its entries).
    Made (32 random bytes, mode 0600) only when `create` (a run about to write)."""
    path = secret_path()
    if path is None or stays_inside(root, path):
        return None
    known = _secrets.get(path)
    if known is None and create:
        _make_secret(path)
        _secrets.pop(path, None)
    if path not in _secrets:
        _secrets[path] = _read_secret(path)
    return _secrets[path]


def _read_secret(path: str) -> bytes | None:
    """The secret, when it is a regular file of this user that no one else may read."""
    data = read_file(path, SECRET_BYTES)
    if data is None or len(data) != SECRET_BYTES:
        return None
    if hasattr(os, "geteuid"):
        status = os.stat(path, follow_symlinks=False)
        if status.st_uid != os.geteuid() or status.st_mode & 0o077:
            return None
    return data


def _make_secret(path: str) -> None:
    """A new secret, unless one exists: linked into place, so two runs that race agree."""
    import contextlib
    import tempfile

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")  # mode 0600
    except OSError:
        return
    with contextlib.suppress(OSError):  # FileExistsError: another run made it first
        with os.fdopen(handle, "wb") as file:
            file.write(os.urandom(SECRET_BYTES))
        os.link(temporary, path)
    with contextlib.suppress(OSError):
        os.unlink(temporary)


def _tag(key: bytes, name: str, value: bytes) -> bytes:
    import hashlib

    digest = hashlib.blake2b(key=key, digest_size=TAG_BYTES, person=b"amp-clipfix")
    digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(value)
    return digest.digest()


def seal(key: bytes, name: str, value: bytes) -> bytes:
    """What an entry named `name` holding `value` is stored as."""
    return SEAL + _tag(key, name, value) + value


def unseal(key: bytes, name: str, data: bytes) -> bytes | None:
    """The value of a stored entry named `name`; None unless this key sealed it under that name."""
    import hmac  # compare_digest: the time taken says nothing of the tag

    head = len(SEAL) + TAG_BYTES
    if len(data) < head or not data.startswith(SEAL):
        return None
    value = data[head:]
    return value if hmac.compare_digest(data[len(SEAL) : head], _tag(key, name, value)) else None


def read_file(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """A regular file's bytes when there are at most `limit` of them; None otherwise. Never
    follows a link in the last component and never waits on a pipe a repository planted."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
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


# -- a cache the checkout tracks -----------------------------------------------------------------


def tracked(root: str | os.PathLike[str]) -> bool:
    """Whether git tracks any file of the cache folder in `root` (committed with `git add -f`):
    such a folder is never written, so a check never changes the checkout. Asked only before a
    write, so a run that writes nothing (a warm run, a replay) never starts git for it; the
    answer decides where nothing is printed, so it is not noted for the replay."""
    from amp_clipfix import observed

    return bool(observed.git(["ls-files", "-z", "--", CACHE_DIR], root, note=False))


class Entries:
    """The entries of the cache in project `root` as they are read and written: sealed with
    this user's secret under their names, never bigger than the bound, never through a link
    that leaves the project, never into a cache folder the checkout tracks. Both the per-file
    cache and the replay's records go through here."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = root
        self.key = secret(root)  # None until one is made: every read misses
        self.writable: bool | None = None  # asked before the first write
        self.inside: dict[str, bool] = {}  # folder -> its real place is in the project
        self.ready = False

    def read(self, folder: str, name: str) -> bytes | None:
        """The value of entry `folder/name`, or None (a miss) for anything but an entry this
        user sealed under this name."""
        if self.key is None or not self.is_inside(folder):
            return None
        data = read_file(os.path.join(folder, name), len(SEAL) + TAG_BYTES + MAX_ENTRY_BYTES)
        return None if data is None else unseal(self.key, name, data)

    def write(self, folder: str, name: str, value: bytes) -> bool:
        """Store `value` as entry `folder/name`, whole or not at all; False when not written."""
        if len(value) > MAX_ENTRY_BYTES or not self.is_inside(folder) or not self.may_write():
            return False
        if self.key is None:
            self.key = secret(self.root, create=True)
        if self.key is None:
            return False
        try:
            self.prepare()
            write_entry(folder, name, seal(self.key, name, value))
        except OSError:
            return False
        return True

    def may_write(self) -> bool:
        """Never into a cache folder the checkout tracks (a check changes no tracked file)."""
        if self.writable is None:
            self.writable = not tracked(self.root)
        return self.writable

    def is_inside(self, folder: str) -> bool:
        """Nothing is read or written through a link that leads out of the project."""
        known = self.inside.get(folder)
        if known is None:
            known = self.inside[folder] = stays_inside(self.root, folder)
        return known

    def prepare(self) -> None:
        """The cache folder holds a `.gitignore` that ignores everything in it."""
        if self.ready:
            return
        folder = os.path.join(self.root, CACHE_DIR)
        if not os.path.exists(os.path.join(folder, ".gitignore")):
            write_entry(folder, ".gitignore", b"# Created by amp-clipfix automatically.\n*\n")
        self.ready = True
