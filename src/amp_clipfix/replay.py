"""The replay of an unchanged `check`: its output again, without analysing anything.

A `check` whose output goes to no terminal (CI, pre-commit, an editor, a pipe) notes every
question it asks of the file system (observed.py: what a folder holds, which bytes a file has,
what git lists) and, when it ends with 0 or 1, its output and exit code, in the nearest cache
folder at or above the current folder. The same command line, from the same folder, with the
same environment, interpreter, packages and amp-clipfix build, asks those questions again before
anything else is imported; when every answer is the same, so would the whole run be, and the
noted output is written instead. A file read with a settled status (observed.is_settled) that
still has it is not read again: the replay of an unchanged tree stats its files. The analysis
itself stays cached by content hash (analysis/cache.py); this only saves starting it.

A record is trusted as the cache's entries are (cache_layout.py): sealed with this user's
secret under its key, or a miss. Not noted: a run that saw an input change under it (a question
answered twice, differently), a run whose output could not be written, and a run that printed
what depends on time or the terminal (the progress bar, the summary table with the time taken).

This module is the entry point (`amp-clipfix`, `python -m amp_clipfix`): it imports the command
line when there is nothing to replay, and the command line never imports it back (it tells
run_notes.py whether the run may be noted).

Standard library only, so that a replay costs little more than starting Python and reading the
files.
"""

from __future__ import annotations

import io
import marshal
import os
import sys

from amp_clipfix import observed, run_notes

TYPE_CHECKING = False  # importing typing (or contextlib) would cost a replay ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import IO

# Variables a shell changes between two runs of one command; every other one is part of the key.
VOLATILE_VARIABLES = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})

# The newest records of a cache folder; older ones are removed. Every command line has its
# record (pre-commit names other files at each commit), so the folder would grow without end.
KEPT_RECORDS = 32

# What a run whose output could not be written exits with: click's answer to a closed pipe.
EXIT_BROKEN_PIPE = 1

Output = list[tuple[int, bytes]]  # (1 stdout or 2 stderr, bytes) in the order written

# The entry of a cache's replay folder that holds the settled reads of the last noted run, each
# with its digest (observed.Recording.known): a run that is not replayed hashes only the files
# whose status changed. A record's name is 64 hex digits, so pruning never takes it. Named
# apart from the `statuses` table of earlier builds, which noted a status whatever number of
# bytes the read gave: a read of as many bytes as a noted status says is now taken for the
# whole file (observed._read_with_status).
STATUSES = "whole-statuses"

# How many files the table of settled reads (STATUSES) may hold another entry for than a run
# read them with before it is written again (`drifted`).
TABLE_SLACK = 16

# The files read unsettled besides the named ones whose questions a record's probe holds
# (`probe_paths`); what is asked of each: observed.PATH_KINDS.
PROBED_READS = 16


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


def run_key(arguments: list[str], parts: list[str] | None = None) -> str:
    """What decides a run besides the file system: the command line, the current folder, the
    environment (`run_parts`, or `parts` as they were taken before the run), and the tool
    build with its interpreter and packages (`fingerprint`)."""
    from amp_clipfix.cache_layout import fingerprint  # a run that cannot be replayed never hashes

    digest = observed.blake2b(digest_size=32)
    for part in [fingerprint(), *(run_parts(arguments) if parts is None else parts)]:
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def run_parts(arguments: list[str]) -> list[str]:
    """The current folder, the command line and the environment, as run_key hashes them."""
    environment = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE_VARIABLES)
    parts = [os.getcwd(), *arguments, "\0"]
    return parts + [f"{name}={value}" for name, value in environment]


def _cache_folders() -> list[str]:
    """This version's cache folders in the current folder and above it, nearest first: a run
    from inside a project keeps its cache in the project's root."""
    from amp_clipfix.cache_layout import version_folder  # a run with the cache off: never

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


def _project_root(cache: str) -> str:
    """The project whose cache folder `cache` (this version's) is."""
    return os.path.dirname(os.path.dirname(cache))


def replay(key: str) -> int | None:
    """Write the noted output and return the exit code, when the record still holds."""
    noted = _record(key)
    if noted is None:
        return None
    output, code = noted
    try:
        for stream, data in output:  # in the run's order, each chunk flushed before the next:
            # with both streams sent to one file a buffered stdout would land mid-line later
            target = sys.stdout if stream == 1 else sys.stderr
            target.buffer.write(data)
            target.flush()
    except BrokenPipeError:  # the reader stopped early (`| head`): quietly, as the run does
        _silence_output()
        return EXIT_BROKEN_PIPE
    return code


def _record(key: str) -> tuple[Output, int] | None:
    """The output and exit code of the record of `key` in the nearest cache that has one, when
    this user sealed it and every noted question still gets its answer."""
    from amp_clipfix.cache_layout import Entries

    for cache in _cache_folders():
        folder = os.path.join(cache, "replay")
        if not os.path.isfile(os.path.join(folder, key)):
            continue
        data = Entries(_project_root(cache)).read(folder, key)
        if data is None:
            return None
        try:
            probe, probe_statuses, rest = marshal.loads(data)
            if type(probe) is not dict or type(probe_statuses) is not dict:
                return None
            if not observed.still_answers(probe, probe_statuses):
                return None  # a question likeliest to change did: the rest is not loaded
            answers, output, exit_code, statuses = marshal.loads(rest)
            if not (_is_output(output) and type(exit_code) is int and type(answers) is dict):
                return None
            if type(statuses) is not dict:
                return None
            return (output, exit_code) if observed.still_answers(answers, statuses) else None
        except Exception:  # noqa: BLE001 - a record that fails to load is a miss
            return None
    return None


def _silence_output() -> None:
    """Point both streams at the null device: what is still buffered for a closed pipe is
    dropped at exit instead of raising again while Python shuts down."""
    for stream in (sys.stdout, sys.stderr):
        try:
            nothing = os.open(os.devnull, os.O_WRONLY)
            os.dup2(nothing, stream.fileno())
            os.close(nothing)
        except (OSError, ValueError, AttributeError):
            continue


def _is_output(output: object) -> bool:
    return isinstance(output, list) and all(
        isinstance(chunk, tuple) and len(chunk) == 2 and isinstance(chunk[1], bytes)
        for chunk in output
    )


def save(
    key: str | Callable[[], str],
    seen: observed.Recording,
    output: Output,
    code: int,
    named: Sequence[str] = (),
) -> None:
    """Note the run (`seen`: its questions and answers, and the settled statuses of the files
    it read) in the nearest cache at or above the current folder (the run made one when the
    current folder is in a project), when the command allowed it and nothing refused it.
    Sealed with this user's secret; written whole or not at all; never into a cache folder the
    checkout tracks. `key`: the run's key, or how to work it out (a run that began with no
    cache folder to replay from, and may have made one). `named`: the command line's
    arguments as absolute paths, whose questions the record's probe holds (`probed`)."""
    caches = _cache_folders()
    if not run_notes.may_note(code) or not caches:
        return
    if not isinstance(key, str):
        key = key()
    from amp_clipfix.cache_layout import Entries

    folder = os.path.join(caches[0], "replay")
    statuses = {path: status for path, status in seen.statuses.items() if status is not None}
    try:
        probing = probe_paths(named, seen.statuses)
        record = packed(seen.answers, output, code, statuses, probing)
    except ValueError:  # marshal refused a value
        return
    entries = Entries(_project_root(caches[0]))
    if entries.write(folder, key, record):
        entries.prune(folder, KEPT_RECORDS, _is_record_name)
    table = seen.table()
    if table and drifted(table, seen.known):
        entries.write(folder, STATUSES, marshal.dumps(table))


def drifted(table: dict[str, tuple[observed.Status, bytes]], known: dict[str, object]) -> bool:
    """Whether this run's table of settled reads is worth writing over the stored one (`known`):
    none is stored, or more than TABLE_SLACK files are read with another status or digest, are
    new or are gone. A table is a hint: a file gets a stored digest only when its status is the
    stored one, and that status still means those bytes however old the table is
    (observed.is_settled). So the few files an edit changed are hashed again by the next runs
    (~25 us each) instead of the whole table being sealed and written (0.47 MB on NeMo, ~3 ms)
    after every edit."""
    if not known:
        return True
    changed = sum(1 for path, entry in table.items() if known.get(path) != entry)
    gone = len(known) - len(table.keys() & known.keys())
    return changed + gone > TABLE_SLACK


def packed(
    answers: dict[observed.Question, object],
    output: Output,
    code: int,
    statuses: dict[str, observed.Status],
    probed_paths: Sequence[str] = (),
) -> bytes:
    """A record's value: the probe (`probed`: the questions of `probed_paths`) with those files'
    settled statuses, then every question, the output, the exit code and every settled
    status, marshalled apart: a replay loads them only when the probe holds (the whole of
    NeMo's 0.9 MB record took ~5 ms to load). Every question, the probe's too: a copy without
    them made marshal note each question shared (~2 ms), and a replay asks them again at the
    cost of a few `stat`s. Raises ValueError (a value marshal refuses)."""
    probe = probed(answers, probed_paths)
    probe_statuses = {path: statuses[path] for path in probed_paths if path in statuses}
    return marshal.dumps((probe, probe_statuses, marshal.dumps((answers, output, code, statuses))))


def unpacked(
    value: bytes,
) -> tuple[dict[observed.Question, object], Output, int, dict[str, observed.Status]]:
    """A record's (answers, output, exit code, statuses), as `packed` was given them."""
    _, _, rest = marshal.loads(value)
    answers, output, code, statuses = marshal.loads(rest)
    return answers, output, code, statuses


def probed(
    answers: dict[observed.Question, object], paths: Sequence[str]
) -> dict[observed.Question, object]:
    """The questions of `answers` about `paths` (looked up, not searched: a record holds
    thousands), in that order."""
    return {
        question: answers[question]
        for path in paths
        for kind in observed.PATH_KINDS
        if (question := (kind, path, "")) in answers
    }


def probe_paths(named: Sequence[str], statuses: dict[str, observed.Status | None]) -> list[str]:
    """The files whose questions a replay asks first: the paths the command line names (the
    pre-commit hook names the files just staged), then up to PROBED_READS files read without a
    settled status (`statuses`: Recording.statuses), changed in the seconds before the run.
    Only an order: a replay asks every question of the record when these hold."""
    unsettled = [path for path, status in statuses.items() if status is None and path not in named]
    return [*named, *unsettled[:PROBED_READS]]


def named_paths(cwd: str, arguments: list[str]) -> list[str]:
    """Each argument as an absolute path from `cwd`, once (an option's name makes one that no
    question asks about)."""
    return list(dict.fromkeys(os.path.normpath(os.path.join(cwd, name)) for name in arguments))


def known_reads() -> dict[str, object]:
    """The settled reads the last noted run left in the nearest cache (STATUSES), or none."""
    from amp_clipfix.cache_layout import Entries

    caches = _cache_folders()
    if not caches:
        return {}
    data = Entries(_project_root(caches[0])).read(os.path.join(caches[0], "replay"), STATUSES)
    try:
        table = marshal.loads(data) if data is not None else {}
    except Exception:  # noqa: BLE001 - a table that fails to load is no table
        return {}
    return table if type(table) is dict else {}


def _is_record_name(name: str) -> bool:
    """A record's name: its run key, 64 lowercase hex digits (run_key)."""
    return len(name) == 64 and all(character in "0123456789abcdef" for character in name)


class _Tee(io.BufferedIOBase):
    """A binary stream that passes everything to `target` and notes it in `captured`."""

    def __init__(self, number: int, target: IO[bytes], captured: Captured) -> None:
        super().__init__()
        self.number, self.target, self.captured = number, target, captured

    @property
    def name(self) -> str:
        return str(getattr(self.target, "name", "<output>"))

    def writable(self) -> bool:
        return True

    def write(self, data: bytes, /) -> int:  # type: ignore[override]
        self.captured.output.append((self.number, bytes(data)))
        try:
            self.target.write(data)
        except BaseException:
            self.captured.failed = True  # the noted output is not what the reader got
            raise
        return len(data)

    def flush(self) -> None:
        try:
            self.target.flush()
        except BaseException:
            self.captured.failed = True
            raise

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.target.fileno()


class Captured:
    """stdout and stderr as they were, also noted in order (`output`) while it is entered;
    `failed` once a write or flush to either failed."""

    def __init__(self) -> None:
        self.output: Output = []
        self.failed = False
        self.originals = sys.stdout, sys.stderr

    def __enter__(self) -> Captured:
        sys.stdout, sys.stderr = (
            io.TextIOWrapper(
                _Tee(number, stream.buffer, self),
                encoding=stream.encoding,
                errors=stream.errors,
                line_buffering=bool(stream.line_buffering),
                write_through=True,
            )
            for number, stream in ((1, sys.stdout), (2, sys.stderr))
        )
        return self

    def flush(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                self.failed = True

    def __exit__(self, *exception: object) -> None:
        self.flush()
        sys.stdout, sys.stderr = self.originals


def main() -> None:
    """The `amp-clipfix` command: a replay when one holds, else the command line (quick.py,
    which hands what it does not read itself to cli.py)."""
    try:
        _main()
    except SystemExit as end:
        _end_now(end)
        raise


def _end_now(end: SystemExit) -> None:
    """End the process at once with the command's exit code once its output is flushed:
    Python's own exit frees every object of the run one by one (~0.25 s of CPU after the
    searches on the Lightning repository) for nothing. Only where this function is the
    process's command (`amp-clipfix`, `python -m amp_clipfix`), nothing traces or profiles it
    (coverage, cProfile write their data at exit) and no other thread runs; a program that
    calls `main()` itself (the tests) goes on, and so does a flush that fails (Python's exit
    reports it)."""
    code = end.code
    if not (code is None or isinstance(code, int)):
        return  # a message: Python prints it
    if not run_notes.is_the_command():
        return
    threading = sys.modules.get("threading")
    if sys.gettrace() or sys.getprofile() or (threading and threading.active_count() > 1):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)


def _main() -> None:
    run_notes.few_garbage_collections()
    run_notes.reset()
    arguments = sys.argv[1:]
    if not replayable(arguments):
        return _command_line()
    try:
        parts = run_parts(arguments)
    except OSError:  # the current folder is gone: the command line says so
        return _command_line()

    def worked_out() -> str:
        return run_key(arguments, parts)

    # With no cache folder at or above the current folder there is no record to replay, so
    # the build is not hashed for one (fingerprint: ~6 ms). A run that makes a cache folder
    # works its key out when it notes the record, from the command line, folder and
    # environment taken before it ran (the analysis cache has hashed the build by then).
    key: str | Callable[[], str] = worked_out
    if _cache_folders():
        key = run_key(arguments, parts)
        code = replay(key)
        if code is not None:
            sys.exit(code)
    with observed.Recording() as seen, Captured() as captured:
        seen.known = known_reads()
        try:
            _command_line()
        except SystemExit as end:
            if end.code in (0, 1, 2, None):
                captured.flush()
                if not (captured.failed or seen.changed):
                    named = named_paths(parts[0], arguments)
                    save(key, seen, captured.output, int(end.code or 0), named)
            raise


def _command_line() -> None:
    from amp_clipfix.quick import main as command_line

    command_line()
