"""Parse and collect a project's files: one by one, in a process pool when it pays (a worker that
dies costs only its file), or from the per-file cache.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collection import Collection, read_as_config
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.records import replace
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import SourceError
from amp_clipfix.sources.python import ignore_compile_warnings

if TYPE_CHECKING:
    from amp_clipfix.analysis.read import ReadFile


# Below this much source a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 512 * 1024


def parse_error(path: Path, data: bytes) -> FileError:
    """The one-line error of a file a search wanted that Python cannot parse."""
    _, error = parse_and_collect(path, data)
    return error or FileError(path, "cannot parse", ErrorKind.PARSE)


def collect_files(
    contents: dict[Path, bytes], paths: list[Path], jobs: int, collection: Collection
) -> None:
    """Parse and collect `paths`, in a process pool when it pays; results in input order."""
    collection.attempted.update(paths)
    if collection.cache is not None:
        paths = [path for path in paths if not from_cache(collection, path, contents[path])]
    if collection.outcomes is not None:
        paths = [path for path in paths if not kept_outcome(collection, path, contents[path])]
    work = [(path, contents[path]) for path in paths]
    if jobs > 1 and len(work) > 1 and sum(len(data) for _, data in work) > PARALLEL_MIN_BYTES:
        for path, outcome in zip(paths, parse_in_pool(work, min(jobs, len(work)))):
            collect_outcome(collection, path, outcome)
            keep_outcome(collection, path, contents[path], outcome)
    else:
        for path, data in work:
            outcome = parse_and_collect(path, data)
            collect_outcome(collection, path, outcome)
            keep_outcome(collection, path, data, outcome)


def kept_outcome(collection: Collection, path: Path, data: bytes) -> bool:
    """A file an earlier round of apply's fixpoint parsed from these very bytes: its outcome
    (the file's sites before any resolution) is collected again, not parsed again."""
    assert collection.outcomes is not None
    kept = collection.outcomes.get(path)
    if kept is None or (kept[0] is not data and kept[0] != data):
        return False
    collect_outcome(collection, path, kept[1], cached=kept[2])  # type: ignore[arg-type]
    return True


def keep_outcome(
    collection: Collection, path: Path, data: bytes, outcome: Outcome, cached: bool = False
) -> None:
    if collection.outcomes is not None:
        collection.outcomes[path] = (data, outcome, cached)


Outcome = tuple["ReadFile | None", "FileError | None"]


def parse_in_pool(work: list[tuple[Path, bytes]], workers: int) -> list[Outcome]:
    """Outcomes in input order. A worker that dies (a crash in native code, the OOM killer)
    costs only the file that killed it: the files of the batches left unfinished are parsed
    again one by one, each in a process of its own, so that only the killer is reported."""
    from concurrent.futures import ProcessPoolExecutor  # a run that needs no pool never
    from concurrent.futures.process import BrokenProcessPool  # pays for multiprocessing

    outcomes: list[Outcome | None] = [None] * len(work)
    with ProcessPoolExecutor(max_workers=workers, initializer=leave_interrupts_to_parent) as pool:
        tasks = [(start, pool.submit(parse_batch, batch)) for start, batch in batches(work)]
        try:
            for start, future in tasks:
                with contextlib.suppress(BrokenProcessPool):  # the batch is parsed again
                    done = future.result()
                    outcomes[start : start + len(done)] = done
        except BaseException:  # Ctrl-C: the files not started are not parsed any more
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [
        outcome if outcome is not None else parse_isolated(*work[index])
        for index, outcome in enumerate(outcomes)
    ]


# A worker's task: a run of files, up to this many or this much source (at least one file).
# One round trip per batch, not per file: a task's own cost (its future, the pickled call and
# result, the queues' threads) was more than a small file's parse. A batch whose worker dies is
# parsed again file by file, each in a process of its own, so it stays small.
BATCH_FILES = 32
BATCH_BYTES = 64 * 1024


def batches(work: list[tuple[Path, bytes]]) -> list[tuple[int, list[tuple[Path, bytes]]]]:
    """`work` cut in runs of consecutive files, each with the index of its first file."""
    runs: list[tuple[int, list[tuple[Path, bytes]]]] = []
    size = 0
    for index, item in enumerate(work):
        if not runs or len(runs[-1][1]) == BATCH_FILES or size + len(item[1]) > BATCH_BYTES:
            runs.append((index, []))
            size = 0
        runs[-1][1].append(item)
        size += len(item[1])
    return runs


def parse_batch(batch: list[tuple[Path, bytes]]) -> list[Outcome]:
    """A worker's task: each file's outcome, in order, without the `ast` tree its sites were
    read from: the parent parses a module again when it needs its summary (as for a file whose
    sites come from the cache), which costs less than pickling the tree here and unpickling it
    there (node by node)."""
    return [without_tree(parse_and_collect(path, data)) for path, data in batch]


def without_tree(outcome: Outcome) -> Outcome:
    read, error = outcome
    if read is None or read.syntax is None:
        return outcome
    return replace(read, syntax=None), error


WORKER_DIED = "cannot parse: the parsing process died on this file"


def leave_interrupts_to_parent() -> None:
    """A parsing process ignores Ctrl-C (the terminal sends it to the whole process group):
    the command ends the run and says so once, without a traceback from each worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ignore_compile_warnings()  # nor does it print what Python says compiling the user's code


def parse_isolated(path: Path, data: bytes) -> Outcome:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, initializer=leave_interrupts_to_parent) as pool:
            return pool.submit(parse_and_collect, path, data).result()
    except BrokenProcessPool:
        return None, FileError(path, WORKER_DIED, ErrorKind.PARSE)


def from_cache(collection: Collection, path: Path, data: bytes) -> bool:
    """A file whose sites the cache holds is loaded (no libcst) with those sites."""
    assert collection.cache is not None
    sites = collection.cache.get(path, data)
    if sites is None:
        return False
    from amp_clipfix.analysis.read import ReadFile

    try:
        document = adapter_for(path).load(path, data)
    except SourceError:
        return False
    outcome: Outcome = (ReadFile(document, sites), None)
    collect_outcome(collection, path, outcome, cached=True)
    keep_outcome(collection, path, data, outcome, cached=True)
    return True


def collect_outcome(
    collection: Collection,
    path: Path,
    outcome: tuple[ReadFile | None, FileError | None],
    cached: bool = False,
) -> None:
    parsed, error = outcome
    if read_as_config(path):
        collection.config_sites[path] = parsed.sites if parsed is not None else None
        if parsed is not None and parsed.settings is not None:
            collection.config_settings[path] = parsed.settings
        else:  # never the settings of other bytes of the file
            collection.config_settings.pop(path, None)
    if collection.cache is not None and parsed is not None and not cached:
        collection.cache.put(path, parsed.document.source.data, parsed.sites)
    collection.files_parsed += 1
    collection.files_done += 1
    collection.progress.done(1)
    if error is not None:
        collection.errors.append(error)
        return
    if parsed is not None and not cached:
        collection.parses.add(path)
    if parsed is None:
        return
    # a call the imports do not name is kept for the resolution to name (resolve_callees.py)
    read = parsed.sites
    if read.sites or read.classes or read.fits or read.candidates:
        collection.parsed[path] = parsed


def parse_and_collect(path: Path, data: bytes) -> tuple[ReadFile | None, FileError | None]:
    """One file: load it through its adapter, parse once, read its sites. Errors come back as
    values, so that one odd file never stops the run (and survives a process pool)."""
    from amp_clipfix.analysis.read import ParseError, read_document  # only files that pass

    try:
        return read_document(adapter_for(path).load(path, data)), None
    except ParseError as error:
        where = (error.line, error.column, error.cell)
        return None, FileError(path, str(error), ErrorKind.PARSE, *where)
    except SourceError as error:
        kind = ErrorKind.PARSE if str(error).startswith("cannot parse") else ErrorKind.READ
        return None, FileError(path, str(error), kind)
    except Exception as error:  # noqa: BLE001 - one odd file must not stop the run
        message = f"internal error while reading sites: {error!r}"
        return None, FileError(path, message, ErrorKind.INTERNAL)
