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
- it is a regular file of this user's, of a bounded size, read without following a link.

Every path of the cache (the cache folder, each folder in it, each entry) is reached from the
project's root through plain folders of this user, each opened without following a link and
every name looked up relative to the open folder (`open_folder`): a repository that ships a link
there (to its own `src/`, to anywhere) gets nothing read, written or removed through it. Pruning
removes only files the cache wrote (a name it gives, sealed under that name). A cache folder
that git tracks is never written (`tracked`): a check never changes a file of the checkout.
Standard library only: the replay asks all this before anything else is imported.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time

from amp_clipfix import __version__
from amp_clipfix.cache_folders import (
    BY_FOLDER,
    CLOEXEC,
    NOFOLLOW,
    Folder,
    HeldFolder,
    _plain,
    open_folder,
    read_file,
)
from amp_clipfix.observed import CACHE_DIR, blake2b, is_settled, signature

TYPE_CHECKING = False  # importing typing would cost a replay ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable

    from amp_clipfix.observed import Status

    Noted = tuple[str, Status]  # a package file's relative name and status

FORMAT = "5"  # bump when the cached data's shape (or what a run computes from it) changes

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


# -- what an answer depends on besides its inputs ------------------------------------------------

_fingerprints: dict[tuple[object, ...], str] = {}


def fingerprint() -> str:
    """The tool build and the interpreter a run's answers come from: amp-clipfix's version and
    cache format, the digest of every module of the package (an edited checkout keeps its
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
        digest = blake2b(digest_size=32)  # a run without the cache never hashes
        parts = [__version__, FORMAT, sys.version, sys.implementation.cache_tag or ""]
        parts.append(sys.executable)
        parts += [f"{entry}:{_modified(entry, current)}" for entry in sys.path]
        parts.append(sources_digest(package, time.time_ns()))
        for part in parts:
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
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


# A table of the package's files as the last run that hashed them found them settled, in the
# user's cache folder beside the secret, by the package folder: each file's name and status
# (observed.signature: device, inode, size, mtime, ctime) in the order hashed, with the digest
# of their bytes.
BUILD_TABLE = "build-statuses-1"
MAX_TABLE_BYTES = 4 * 1024 * 1024


def sources_digest(package: str, started: int) -> str:
    """The digest of each module's (and package data file's) relative name and bytes, in name
    order: the table's digest when every file has the status it noted (the same names, each
    status noted settled: observed.is_settled says why that is the same bytes), else hashed
    (and noted when every file read was settled before `started` and unchanged by the read).
    Saves a cached run reading and hashing the package's ~2 MB (~5 ms) for each run."""
    listing = _source_files(package, "")
    statuses, settled = [], True
    for name, path in listing:
        status, may_note = _status(name, path, started)
        statuses.append(status)
        settled = settled and may_note
    table_path = _table_path(package)
    key = None if table_path is None else secret(package)
    if key is not None and table_path is not None and None not in statuses:
        known = _noted_digest(key, table_path, package, statuses)
        if known is not None:
            return known
    digest = blake2b(digest_size=32)
    for (name, path), status in zip(listing, statuses, strict=True):
        data, unchanged = _source_bytes(path, status)
        settled = settled and unchanged
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        digest.update(data)
    found = digest.hexdigest()
    if settled and key is not None and table_path is not None:
        _note(key, table_path, package, statuses, found)
    return found


def _source_files(folder: str, relative: str) -> list[tuple[str, str]]:
    """Each module's and package data file's relative name and path, in name order (folders
    reached without following a link, `__pycache__` left out)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        name = f"{relative}{entry.name}"
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            found += _source_files(entry.path, f"{name}/")
        elif entry.name.endswith((".py", ".json")):
            found.append((name, entry.path))
    return found


def _status(name: str, path: str, started: int) -> tuple[Noted | None, bool]:
    """What the table notes of a file (through a link, as it is read; None when not known), and
    whether it may be noted: its last change SETTLE_NS before `started` (observed.is_settled)."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None, False
    return (name, signature(status)), is_settled(status, started)


def _source_bytes(path: str, noted: Noted | None) -> tuple[bytes, bool]:
    """The file's bytes, and whether the open file still had the status taken before the read."""
    try:
        with open(path, "rb") as file:
            data = file.read()
            after = os.fstat(file.fileno())
    except OSError:
        return b"\0unreadable", False
    return data, noted is not None and signature(after) == noted[1]


def _table_path(package: str) -> str | None:
    """Where the table of `package` lives: beside this user's secret, named by the folder."""
    secret_file = secret_path()
    if secret_file is None:
        return None
    named = blake2b(package.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return os.path.join(os.path.dirname(secret_file), f"build-{named}")


def _noted_digest(
    key: bytes, table_path: str, package: str, statuses: list[Noted | None]
) -> str | None:
    """The table's digest when it was sealed with `key` for this package and these statuses."""
    data = read_file(table_path, len(SEAL) + TAG_BYTES + MAX_TABLE_BYTES)
    value = None if data is None else unseal(key, BUILD_TABLE, data)
    if value is None:
        return None
    try:
        noted_package, noted, digest = marshal.loads(value)
    except Exception:  # noqa: BLE001 - a table that fails to load is no table
        return None
    if noted_package != package or noted != statuses or type(digest) is not str:
        return None
    return digest


def _note(
    key: bytes, table_path: str, package: str, statuses: list[Noted | None], digest: str
) -> None:
    """Write the table whole or not at all (a file of its own, renamed into place)."""
    value = marshal.dumps((package, statuses, digest))
    temporary = f"{table_path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
    try:
        handle = os.open(temporary, flags, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(seal(key, BUILD_TABLE, value))
        os.replace(temporary, table_path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            return


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
    digest = blake2b(key=key, digest_size=TAG_BYTES, person=b"amp-clipfix")
    digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(value)
    return digest.digest()


def seal(key: bytes, name: str, value: bytes) -> bytes:
    """What an entry named `name` holding `value` is stored as."""
    return SEAL + _tag(key, name, value) + value


def unseal(key: bytes, name: str, data: bytes) -> bytes | None:
    """The value of a stored entry named `name`; None unless this key sealed it under that name."""
    # hmac.compare_digest where hmac finds no OpenSSL (importing hmac imports hashlib): the
    # time taken says nothing of the tag
    from _operator import _compare_digest as compare_digest

    head = len(SEAL) + TAG_BYTES
    if len(data) < head or not data.startswith(SEAL):
        return None
    value = data[head:]
    return value if compare_digest(data[len(SEAL) : head], _tag(key, name, value)) else None


GITIGNORE = b"# Created by amp-clipfix automatically.\n*\n"


# -- a cache the checkout tracks -----------------------------------------------------------------


def tracked(root: str | os.PathLike[str]) -> bool:
    """Whether git tracks any file of the cache folder in `root` (committed with `git add -f`):
    such a folder is never written, so a check never changes the checkout. Asked only before a
    write, so a run that writes nothing (a warm run, a replay) never starts git for it; the
    answer decides where nothing is printed, so it is not noted for the replay."""
    from amp_clipfix import observed

    return bool(observed.git(["ls-files", "-z", "--", CACHE_DIR], root, note=False))


class Entries:
    """The entries of the cache in project `root` as they are read, written and pruned: sealed
    with this user's secret under their names, never bigger than the bound, never into a cache
    folder the checkout tracks, and only in folders reached from the root through plain
    folders of this user (`open_folder`): a folder or entry that is a link, whether it leads
    out of the project or into its sources, is neither read, written nor pruned. Both the
    per-file cache and the replay's records go through here."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = root
        self.key = secret(root)  # None until one is made: every read misses
        self.writable: bool | None = None  # asked before the first write
        self.ready = False
        # The parents of the folders read, held open (None: not there when last asked)
        self.held: dict[str, HeldFolder | None] = {}

    def folder(self, folder: str, create: bool = False) -> Folder | None:
        """`folder`, a folder of this project's cache, opened (open_folder)."""
        relative = os.path.relpath(folder, self.root)
        parts = relative.split(os.sep)
        if parts[0] != CACHE_DIR or os.pardir in parts:
            return None
        return open_folder(self.root, parts, create)

    def read(self, folder: str, name: str) -> bytes | None:
        """The value of entry `folder/name`, or None (a miss) for anything but an entry this
        user sealed under this name."""
        if self.key is None:
            return None
        opened = self.to_read(folder)
        if opened is None:
            return None
        with opened:
            data = opened.read(name, len(SEAL) + TAG_BYTES + MAX_ENTRY_BYTES)
        return None if data is None else unseal(self.key, name, data)

    def to_read(self, folder: str) -> Folder | None:
        """`folder` opened for a read, through its parent held open across the reads: a warm
        run reads hundreds of entries in the shards of one folder, and opening root, cache and
        version folder for each cost NeMo's hook command ~0.015 s. By path where it has no
        parent in the cache (or no platform support)."""
        parent, name = os.path.split(folder)
        if parent not in self.held and BY_FOLDER:
            opened = self.folder(parent)
            self.held[parent] = None if opened is None else HeldFolder(opened.fd, opened.path)
        held = self.held.get(parent)
        return self.folder(folder) if held is None else held.child(name)

    def write(self, folder: str, name: str, value: bytes) -> bool:
        """Store `value` as entry `folder/name`, whole or not at all; False when not written."""
        if len(value) > MAX_ENTRY_BYTES or not self.may_write():
            return False
        self.held = {parent: held for parent, held in self.held.items() if held is not None}
        if self.key is None:
            self.key = secret(self.root, create=True)
        if self.key is None:
            return False
        try:
            opened = self.folder(folder, create=True) if self.prepare() else None
            if opened is None:
                return False
            with opened:
                opened.write(name, seal(self.key, name, value))
        except OSError:
            return False
        return True

    def prune(self, folder: str, keep: int, named: Callable[[str], bool]) -> None:
        """Keep the newest `keep` entries of `folder`; of the older files, remove those the
        cache wrote: a name `named` accepts, a plain file of this user, sealed under its name
        with this user's secret. Nothing else is removed, no link is followed, and nothing
        outside the folder is looked at."""
        key = self.key
        opened = None if key is None else self.folder(folder)
        if key is None or opened is None:
            return
        with opened:
            found = []
            try:
                names = [name for name in opened.names() if named(name)]
            except OSError:
                return
            for name in names:
                status = opened.status(name)
                if status is not None and _plain(status, stat.S_IFREG):
                    found.append((status.st_mtime_ns, name))
            for _, name in sorted(found, reverse=True)[keep:]:
                data = opened.read(name, len(SEAL) + TAG_BYTES + MAX_ENTRY_BYTES)
                if data is not None and unseal(key, name, data) is not None:
                    try:
                        opened.unlink(name)
                    except OSError:
                        continue

    def may_write(self) -> bool:
        """Never into a cache folder the checkout tracks (a check changes no tracked file)."""
        if self.writable is None:
            self.writable = not tracked(self.root)
        return self.writable

    def prepare(self) -> bool:
        """The cache folder holds a `.gitignore` that ignores everything in it; False when the
        cache folder is no plain folder of this user (nothing is written then)."""
        if self.ready:
            return True
        opened = open_folder(self.root, [CACHE_DIR], create=True)
        if opened is None:
            return False
        with opened:
            if opened.status(".gitignore") is None:
                opened.write(".gitignore", GITIGNORE)
        self.ready = True
        return True
