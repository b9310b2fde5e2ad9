"""The file system as a run sees it: every question a run asks about files and folders (does it
exist, what is in this folder, what are these bytes, what does git list) goes through here.

While a recording is active each answer is noted; asking the same questions again later and
getting the same answers proves that the run would see exactly what it saw (replay.py replays an
unchanged `check` that way). The questions are the ones the run asks itself, so there is no
second idea of what a run depends on to keep in step. Standard library only: the replay asks
them before the command line is even read.
"""

from __future__ import annotations

import errno
import os
import stat
import time

TYPE_CHECKING = False  # importing typing would cost a replay ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from hashlib import blake2b as Blake2b
    from typing import Any

Question = tuple[str, str, str]  # (what is asked, of which path, with what extra)

# The cache's folder in a project (cache_layout.py): no listing a run asks for ever shows it.
CACHE_DIR = ".amp_clipfix_cache"


class Recording:
    """The questions asked while it is entered, each with its answer. A question asked again
    with another answer (a file an editor saved between two reads of one run) makes the
    recording `changed`: the run saw two states of its input, and no single state explains
    what it printed."""

    def __init__(self) -> None:
        self.answers: dict[Question, object] = {}
        # id(bytes read) -> (those bytes, their digest), until content_digest takes it: the
        # entry keeps the bytes alive, so no other object gets their id meanwhile
        self.digests: dict[int, tuple[bytes, bytes]] = {}
        self.changed = False
        self.previous: Recording | None = None
        self.started = time.time_ns()  # before any question: what `settled` compares with
        # a read file's path -> its status when read, when settled (None: not, or two)
        self.statuses: dict[str, Status | None] = {}
        # path -> (settled status, digest) of an earlier run's reads (replay.py's `known`):
        # a file read with that status before and after gets that digest, unhashed
        self.known: dict[str, object] = {}
        self.digested: dict[str, bytes] = {}  # this run's reads with a settled status
        self.gits: dict[tuple[str, tuple[str, ...]], bytes | None] = {}  # git's answers (`git`)

    def known_status(self, path: str) -> tuple[Status, bytes] | None:
        """The settled status and digest an earlier run read `path` with, when well formed."""
        entry = self.known.get(path)
        if type(entry) is tuple and len(entry) == 2 and type(entry[1]) is bytes:
            status, digest = entry
            if type(status) is tuple and len(status) == 5 and len(digest) == DIGEST_BYTES:
                return status, digest
        return None

    def table(self) -> dict[str, tuple[Status, bytes]]:
        """This run's settled reads with their digests: the next run's `known`."""
        return {
            path: (status, self.digested[path])
            for path, status in self.statuses.items()
            if status is not None and path in self.digested
        }

    def settled(self, path: str, status: os.stat_result, size: int) -> None:
        """Note the status `path` had when its `size` bytes were read, when no later write can
        leave that status as it was (`is_settled`) and they are the size it says (a later
        run takes a read of that size for the whole file: `_read_with_status`); a path read
        twice with two statuses gets none."""
        whole = size == status.st_size
        noted = signature(status) if whole and is_settled(status, self.started) else None
        if self.statuses.setdefault(path, noted) != noted:
            self.statuses[path] = None

    def __enter__(self) -> Recording:
        global _active
        self.previous, _active = _active, self
        return self

    def __exit__(self, *exception: object) -> None:
        global _active
        _active = self.previous


_active: Recording | None = None

Status = tuple[int, int, int, int, int]  # device, inode, size, mtime and ctime in ns

# How much older than a run's start a file's last change must be for its status to stand for
# its bytes (git's "racily clean" entries, Mercurial's ambiguous mtimes): a write after the
# read gets a later ctime, unless it falls in the same tick of the file system's clock (a
# jiffy; 1-2 s on FAT, HFS+, ext3) or that clock runs behind this one (a network share).
SETTLE_NS = 5_000_000_000


def signature(status: os.stat_result) -> Status:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def is_settled(status: os.stat_result, started: int) -> bool:
    """Whether the file's last change (its ctime, which every write sets to the clock and no
    call sets back; its mtime too) is SETTLE_NS older than `started`: then the same status
    later means the same bytes. Never on Windows, whose st_ctime is the creation time."""
    changed = max(status.st_mtime_ns, status.st_ctime_ns)
    return os.name != "nt" and changed < started - SETTLE_NS


def _noted(kind: str, path: str | os.PathLike[str], extra: str, answer: object) -> None:
    if _active is not None:
        question = (kind, os.fspath(path), extra)
        first = _active.answers.setdefault(question, answer)
        if first is not answer and first != answer:
            _active.changed = True


def _plainly(kind: str, path: str | os.PathLike[str]) -> object:
    """A question whose answer is what os.path says (no error to note)."""
    answer = _PLAIN[kind](path)
    _noted(kind, path, "", answer)
    return answer


def lexists(path: str | os.PathLike[str]) -> bool:
    return bool(_plainly("lexists", path))


def exists(path: str | os.PathLike[str]) -> bool:
    return bool(_plainly("exists", path))


def is_file(path: str | os.PathLike[str]) -> bool:
    return bool(_plainly("is_file", path))


def is_dir(path: str | os.PathLike[str]) -> bool:
    return bool(_plainly("is_dir", path))


def is_symlink(path: str | os.PathLike[str]) -> bool:
    return bool(_plainly("is_symlink", path))


def realpath(path: str | os.PathLike[str]) -> str:
    return str(_plainly("realpath", path))


def identity(path: str | os.PathLike[str]) -> tuple[int, int, int]:
    """(device, inode, number of hard links): which names are one file. Raises OSError."""
    try:
        status = os.stat(path)
    except OSError:
        _noted("identity", path, "", None)
        raise
    answer = (status.st_dev, status.st_ino, status.st_nlink)
    _noted("identity", path, "", answer)
    return answer


def listdir(folder: str | os.PathLike[str]) -> list[str]:
    """The folder's names, sorted, without the cache's own folder (every run may change it,
    none reads it as part of the project). Raises OSError."""
    return _names("listdir", folder, _listing)


def distributions(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the folder's distribution metadata (`*.dist-info`, `*.egg-info`, any case),
    sorted: all that the search for an installed package reads of a sys.path folder. Its other
    names are no part of the answer: a `__pycache__` or a log another process writes there
    between two runs changes nothing a run printed. Raises OSError."""
    return _names("distributions", folder, _distribution_names)


def _names(
    kind: str, folder: str | os.PathLike[str], names: Callable[[str | os.PathLike[str]], list[str]]
) -> list[str]:
    """`names(folder)`, noted as the answer to `kind` (None when it raised OSError)."""
    try:
        answer = names(folder)
    except OSError:
        _noted(kind, folder, "", None)
        raise
    _noted(kind, folder, "", tuple(answer))
    return answer


def scandir(folder: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    """The folder's entries sorted by name, without the cache's folder; what a walk asks of them
    (folder? file? link?) is part of the answer. Raises OSError."""
    try:
        entries = _entries(folder)
    except OSError:
        _noted("scandir", folder, "", None)
        raise
    if _active is not None:
        _noted("scandir", folder, "", _entry_kinds(entries))
    return entries


def _listing(folder: str | os.PathLike[str]) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name != CACHE_DIR)


def _distribution_names(folder: str | os.PathLike[str]) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.lower().endswith(METADATA_SUFFIXES))


METADATA_SUFFIXES = (".dist-info", ".egg-info")


def _entries(folder: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as scan:
        return sorted((e for e in scan if e.name != CACHE_DIR), key=lambda entry: entry.name)


def _entry_kinds(entries: list[os.DirEntry[str]]) -> tuple[tuple[str, bool, bool, bool], ...]:
    kinds = []
    for entry in entries:
        try:
            kinds.append(
                (
                    entry.name,
                    entry.is_dir(follow_symlinks=False),
                    entry.is_file(),
                    entry.is_symlink(),
                )
            )
        except OSError:
            kinds.append((entry.name, False, False, False))
    return tuple(kinds)


class NotRegular(OSError):
    """A name that is no regular file (a pipe, a device, a socket, a folder) where a file's
    bytes are asked: never read, so a pipe a repository planted never makes the run wait."""

    def __init__(self) -> None:
        super().__init__(errno.EINVAL, "not a regular file")


READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
READ_CHUNK = 1 << 16


def read_file(path: str | os.PathLike[str]) -> bytes:
    """A regular file's bytes, never waiting: opened non-blocking (a FIFO or a device opens at
    once), then checked to be a regular file before anything is read (NotRegular otherwise).
    Read to its end with `os.read`, the size `fstat` gives at once (a buffered file object
    per file cost a third of the reading: ~2 ms over a 700-file tree). Not noted (read_bytes
    is the run's question); the writer re-reads a file with it. Raises OSError."""
    return _read_with_status(path)[0]


def _read_with_status(
    path: str | os.PathLike[str], expected: Status | None = None
) -> tuple[bytes, os.stat_result, bool]:
    """read_file's bytes, the file's status taken before they were read, and whether the
    status was `expected` both before and after they were read (no write in between).

    A file read whole at once (`size` bytes, as its status says) with the `expected` status
    before and after is not read again to see its end: an earlier run read that status with
    `size` bytes and nothing more (`Recording.settled` notes no other), and the status holds
    (is_settled says why), so the file holds those bytes and no more. Any other read goes
    on to the end (the file may have grown since `fstat`): one `read` less per settled file
    of a warm run (3,000 on NeMo)."""
    handle = os.open(path, READ_FLAGS)
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegular
        known = expected is not None and signature(status) == expected
        first = os.read(handle, max(status.st_size + 1, READ_CHUNK))
        if known and len(first) == status.st_size and signature(os.fstat(handle)) == expected:
            return first, status, True
        parts = [first]
        while first and (part := os.read(handle, max(status.st_size + 1, READ_CHUNK))):
            parts.append(part)
        kept = known and signature(os.fstat(handle)) == expected
        return b"".join(parts), status, kept
    finally:
        os.close(handle)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes (their digest is the answer noted); a name that is no regular file is
    never read (read_file). Raises OSError."""
    name = os.fspath(path)
    known = None if _active is None else _active.known_status(name)
    try:
        data, status, kept = _read_with_status(path, None if known is None else known[0])
    except OSError as error:
        _noted("read", path, "", error.errno)
        raise
    if _active is not None:
        # A settled status an earlier run read these bytes with, kept through this read: the
        # same bytes (is_settled says why), so their digest, not hashed again.
        digest = known[1] if known is not None and kept else _raw_digest(data)
        _noted("read", path, "", digest.hex())
        _active.digests[id(data)] = (data, digest)
        _active.settled(name, status, len(data))
        _active.digested.setdefault(name, digest)
    return data


def content_digest(data: bytes) -> bytes:
    """blake2b-256 of `data`: the digest read_bytes noted for these very bytes while the
    recording is active (taken out of it: the caller keeps it), else worked out. The analysis
    cache keys files by it, so a run that notes hashes each file once."""
    if _active is not None:
        known = _active.digests.pop(id(data), None)
        if known is not None and known[0] is data:
            return known[1]
    return _raw_digest(data)


class LeavesFolder(OSError):
    """A link on the way to a file leads outside the folder it was asked in (the project)."""

    def __init__(self) -> None:
        super().__init__(errno.EXDEV, "a link leads outside the project; not read")


def inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether `path`, every link on the way resolved, lies in `folder` (resolved too): the one
    test of "does this reach outside the project" that every reader and writer asks."""
    real, real_folder = realpath(path), realpath(folder)
    return real == real_folder or real.startswith(os.path.join(real_folder, ""))


def read_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bytes:
    """The bytes of `path`, a file of the project at `folder`; raises LeavesFolder (never
    reading) when a link on the way leads outside it, else as `read_bytes`."""
    if not inside(path, folder):
        raise LeavesFolder  # the realpaths noted are what decided: a replay asks them again
    return read_bytes(realpath(path))


def read_text(path: str | os.PathLike[str], errors: str = "strict") -> str:
    """UTF-8 text, universal newlines (as `Path.read_text`). Raises OSError, UnicodeDecodeError."""
    text = read_bytes(path).decode("utf-8", errors)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def git(arguments: list[str], folder: str | os.PathLike[str], note: bool = True) -> bytes | None:
    """What `git ARGUMENTS` prints in `folder`; None when git cannot be asked (not installed,
    not a checkout, a checkout it refuses). `note=False`: a question whose answer never reaches
    the output (whether the cache may write), which a replay need not ask again. Asked once
    a run (the hook's command asks its index twice and the cache's folder up to three times:
    ~4 ms of git's CPU each): a question has one answer in a run, as `_noted` takes it."""
    asked = (os.fspath(folder), tuple(arguments))
    if _active is not None and asked in _active.gits:
        answer = _active.gits[asked]
    else:
        answer = _run_git(arguments, folder)
        if _active is not None:
            _active.gits[asked] = answer
    if _active is not None and note:
        digest = None if answer is None else _digest(answer)
        _noted("git", folder, "\0".join(arguments), digest)
    return answer


def _run_git(arguments: list[str], folder: str | os.PathLike[str]) -> bytes | None:
    """git's standard output when it exits 0. Spawned without the subprocess module, whose
    imports alone cost a replay ~20 ms (half of it) on POSIX."""
    command = ["git", "-C", os.fspath(folder), *arguments]
    if not hasattr(os, "posix_spawnp"):  # Windows
        import subprocess

        try:
            return subprocess.run(command, capture_output=True, check=True, timeout=120).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    output, child_output = os.pipe()
    nothing = os.open(os.devnull, os.O_RDWR)
    try:
        streams = [(os.POSIX_SPAWN_DUP2, nothing, 0), (os.POSIX_SPAWN_DUP2, child_output, 1)]
        streams.append((os.POSIX_SPAWN_DUP2, nothing, 2))
        child = os.posix_spawnp("git", command, os.environ, file_actions=streams)
    except OSError:
        os.close(output)
        return None
    finally:
        os.close(child_output)
        os.close(nothing)
    with open(output, "rb") as stream:
        printed = stream.read()
    _, status = os.waitpid(child, 0)
    return printed if os.waitstatus_to_exitcode(status) == 0 else None


def still_answers(
    answers: dict[Question, object], statuses: dict[str, Status] | None = None
) -> bool:
    """Whether every question gets the answer it got when it was noted. A file read with a
    settled status (`statuses`, Recording.statuses) that still has that status holds the
    bytes it held: it is not read and hashed again (a stat instead of the whole tree's bytes)."""
    known = statuses or {}
    return all(
        _same_status(question, known) or _answer(*question) == answer
        for question, answer in answers.items()
    )


def _same_status(question: Question, statuses: dict[str, Status]) -> bool:
    kind, path, _ = question
    noted = statuses.get(path) if kind == "read" else None
    if noted is None:
        return False
    try:
        return signature(os.stat(path)) == noted
    except OSError:
        return False


def _answer(kind: str, path: str, extra: str) -> object:
    """The answer to a noted question now, in the form it is noted."""
    if kind == "git":
        arguments = extra.split("\0")
        if not any(tuple(arguments[: len(start)]) == start for start in GIT_LISTINGS):
            return _UNKNOWN  # a record (a file in the project) never makes git run anything else
        answer = git(arguments, path)
        return None if answer is None else _digest(answer)
    try:
        if kind == "read":
            return _digest(read_file(path))
        if kind == "scandir":
            return _entry_kinds(_entries(path))
        if kind == "listdir":
            return tuple(_listing(path))
        if kind == "distributions":
            return tuple(_distribution_names(path))
        if kind == "identity":
            status = os.stat(path)
            return (status.st_dev, status.st_ino, status.st_nlink)
    except OSError as error:
        return error.errno if kind == "read" else None
    question = _PLAIN.get(kind)
    return question(path) if question is not None else _UNKNOWN


GIT_LISTINGS = (("ls-files",), ("--literal-pathspecs", "ls-files"))  # all a run asks of git
_UNKNOWN = object()  # equal to no noted answer: a question this module does not know
_PLAIN: dict[str, Callable[[str | os.PathLike[str]], object]] = {
    "lexists": os.path.lexists,
    "exists": os.path.exists,
    "is_file": os.path.isfile,
    "is_dir": os.path.isdir,
    "is_symlink": os.path.islink,
    "realpath": os.path.realpath,
}
# Every kind of question asked of a path alone (not git's, which names a command): a replay's
# probe asks these of the paths a command line names first (replay.probed).
PATH_KINDS = ("read", "identity", *_PLAIN, "scandir", "listdir", "distributions")


def _digest(data: bytes) -> str:
    """The digest noted for an answer (only the runs that note or replay hash)."""
    return _raw_digest(data).hex()


DIGEST_BYTES = 32


def _raw_digest(data: bytes) -> bytes:
    """blake2b-256 of `data`: what a read is noted by (in hex) and the cache keys a file by."""
    return blake2b(data, digest_size=DIGEST_BYTES).digest()


def blake2b(data: bytes = b"", **parameters: Any) -> Blake2b:
    """hashlib's blake2b, which is the interpreter's own `_blake2` module: what the replay, its
    key, the cache's build fingerprint and its seals hash with. `import hashlib` (and `hmac`)
    loads OpenSSL, ~2.3 ms of a ~17 ms replay; the interpreter's own sha256 would spare that
    but is ~5x slower than OpenSSL's on the ~1.9 MB of sources the fingerprint reads."""
    try:
        from _blake2 import blake2b as made
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b as made
    return made(data, **parameters)
