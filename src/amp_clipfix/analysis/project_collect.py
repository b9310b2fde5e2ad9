"""Collect a project: read every file, then parse only the files the prefilter stages pass, and
resolve; an unchanged project comes back from the cache whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.analysis.collection import (
    Collection,
    NoProgress,
    Progress,
    prefiltered,
    read_as_config,
)
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import excerpt, library_files, os_error_reason
from amp_clipfix.project.discover import Project
from amp_clipfix.records import record
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import SourceError, Stage
from amp_clipfix.sources.notebook import NotebookSource  # imported by adapter_for's module
from amp_clipfix.sources.prefilter import (
    FUSED_WORD,
    holds,
    may_clip,
    search_need,
    texts_hold_any,
    word_start,
)

if TYPE_CHECKING:
    from amp_clipfix.models import FileSites
    from amp_clipfix.sources.prefilter import Mentions

# A finding needs Lightning: some file imports it (on any line, the first one after a UTF-8 BOM
# too), or is a config naming its classes. Compiled (~3 ms) by `re` when first searched, only in
# a project with a fused word.
USES_LIGHTNING = (
    rb"(?:^|;|\A\xef\xbb\xbf)\s*(?:from\s+|import\s+(?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*)"
    rb"(?:lightning|pytorch_lightning|lightning_fabric)\b|"
    rb"class_path|_target_|\btrainer\s*:"
)
# Its alternatives, asked one by one where the text holds their word (uses_lightning).
IMPORTS_LIGHTNING = USES_LIGHTNING.split(b"|class_path")[0]
TRAINER_KEY = word_start(b"trainer") + rb"\s*:"  # `\btrainer\s*:`


def uses_lightning(data: bytes) -> bool:
    """USES_LIGHTNING's answer, each alternative searched only where its word is in the text:
    `re` tries an alternation that starts with no word at every position of a module (0.07 s
    over mmengine's 322 modules, none of which uses Lightning), a word is found at once."""
    return (
        b"class_path" in data
        or b"_target_" in data
        or (b"trainer" in data and re.search(TRAINER_KEY, data) is not None)
        or (b"lightning" in data and re.search(IMPORTS_LIGHTNING, data, re.MULTILINE) is not None)
    )


def collect_project(
    project: Project,
    jobs: int,
    prefilter: bool = True,
    progress: Progress | None = None,
    cache: bool = False,
    fixed: Mapping[Path, bytes] | None = None,
    previous: Collection | None = None,
    keep_outcomes: bool = False,
    certify: bool = False,
    restore: bool = True,
) -> Collection:
    """Parse and collect the files of a project that can matter, in up to two stages.

    With the prefilter: first the files that may build a fused optimizer; only when a class or
    a config does, the files that may configure (or clip on) a Trainer. A module class's bases
    need no stage of their own: the resolution's evaluator reads them where they are.
    `fixed`: the bytes a previous round of fixes gave some files (pipeline.py's fixpoint), read
    in place of the files' own; `previous`: that round's collection, whose bytes stand for
    the other files (not read again) and whose parses and summaries of them are taken as
    they are (`keep_outcomes` on the first round keeps the parses). `certify`: the queries
    may skip the catch-up where it is certain (certificate.py); not `restore`: a stored
    collection is not taken (a second attempt: the first stored it before its rules ran).
    """
    collection = Collection(progress=progress or NoProgress(), root=project.root, certify=certify)
    if previous is not None:
        collection.outcomes = previous.outcomes
        fixed = {**previous.contents, **(fixed or {})}
        collection.summaries.update(
            (path, summary)
            for path, summary in previous.summaries.items()
            if path in previous.contents and fixed.get(path) is previous.contents[path]
        )
        collection.promised.update(  # as their summaries would be (made when asked)
            path
            for path in previous.promised
            if path in previous.contents and fixed.get(path) is previous.contents[path]
        )
    elif keep_outcomes:
        collection.outcomes = {}
    collect_project_files(project, jobs, prefilter, collection, cache, fixed or {}, restore)
    # every file has been looked at now, parsed or not
    collection.progress.done(max(len(project.files) - collection.files_done, 0))
    return collection


def collect_source(path: Path, data: bytes) -> Collection:
    """One file's contents given directly (stdin): collected and resolved on its own."""
    from amp_clipfix.analysis.parse_pool import collect_outcome, parse_and_collect
    from amp_clipfix.analysis.project_resolve import resolve_collection

    collection = Collection(root=path.parent)
    collect_outcome(collection, path, parse_and_collect(path, data))
    if not read_as_config(path):
        try:
            searchable = {path: adapter_for(path).searchable(path, data)}
        except SourceError:
            searchable = {}
        collection.contents, collection.searchable = {path: data}, searchable
        if searchable:
            resolve_collection(path.parent, {path: data}, searchable, collection)
    return collection


def collect_project_files(
    project: Project,
    jobs: int,
    prefilter: bool,
    collection: Collection,
    cache: bool,
    fixed: Mapping[Path, bytes] | None = None,
    restore: bool = True,
) -> None:
    """collect_project's work: from the cache when the project is unchanged, else the stages."""
    if cache:
        from amp_clipfix.analysis.cache import Cache

        collection.cache = Cache(project.root)
    contents, searchable = read_project(project, collection, prefilter, fixed or {})
    collection.contents, collection.searchable = contents, searchable
    key = ""
    if collection.cache is not None:
        key = collection.cache.project_key("collection", contents, prefilter)
        if restore and restore_collection(collection, contents, collection.cache.load(key)):
            return
        from amp_clipfix.analysis.certificate import Watch
        from amp_clipfix.analysis.queries import Queries

        def evaluator() -> object:
            from amp_clipfix.analysis.project_resolve import project_evaluator_of

            return project_evaluator_of(project.root, contents, searchable, collection)

        collection.queries = Queries(
            collection.cache,
            contents,
            searchable,
            f"prefilter={prefilter}",
            lambda: collection.evaluator,
            Watch(collection, evaluator, collection.certify),
        )
    read_errors = len(collection.errors)
    collect_stages(project.root, contents, searchable, jobs, prefilter, collection)
    errors = collection.errors[read_errors:]
    # Restored, the rules run on a new evaluator; a cold run's run on the one the resolution
    # left, whose memos and spent budget decide what a budget cuts (and where a cycle is
    # entered): so only a collection that made no evaluator is stored. The others are
    # answered by the queries, which bring the evaluator to where a cold run has it.
    queries = collection.queries
    evaluated = collection.evaluator is not None or queries is not None and queries.moved
    if collection.cache is not None and not evaluated and all(map(is_lasting, errors)):
        sites = {path: parsed.sites for path, parsed in collection.parsed.items()}
        collection.cache.store(key, CollectedProject(sites, tuple(errors), collection.files_parsed))


@record(frozen=True)
class CollectedProject:
    """What collecting an unchanged project gives again: each file's sites after the
    resolution, the files' errors, how many files were parsed (the cache's project entry)."""

    sites: dict[Path, FileSites]
    errors: tuple[FileError, ...]
    files_parsed: int


def restore_collection(collection: Collection, contents: dict[Path, bytes], cached: object) -> bool:
    """Fill `collection` from a cached CollectedProject: no stage, search or resolution runs
    (only the documents with sites are loaded, for the fixes and the report)."""
    if not isinstance(cached, CollectedProject):
        return False
    from amp_clipfix.analysis.read import ReadFile

    parsed = {}
    for path, sites in cached.sites.items():
        try:
            parsed[path] = ReadFile(adapter_for(path).load(path, contents[path]), sites)
        except (SourceError, KeyError):
            return False
    collection.parsed.update(parsed)
    collection.errors.extend(cached.errors)
    collection.files_parsed = cached.files_parsed
    return True


def is_lasting(error: FileError) -> bool:
    """An error the next run on the same files gives again (a parse error), unlike a parsing
    process that died (memory) or a resolution that failed: only those are cached."""
    from amp_clipfix.analysis.parse_pool import WORKER_DIED

    return error.kind is ErrorKind.PARSE and error.message != WORKER_DIED


def read_project(
    project: Project,
    collection: Collection,
    prefilter: bool = True,
    fixed: Mapping[Path, bytes] | None = None,
) -> tuple[dict[Path, bytes], dict[Path, bytes]]:
    """Every file's bytes, and what the prefilter reads of it (a notebook's code cells).

    A library's own code (paths.library_files: site-packages, Lightning's package, a module of
    torch's or Lightning's own package kept in the project) is read, and never searched: it has
    no text to search, so it costs no word scan, parse or evaluation. With the prefilter, a
    project in which no other file's raw bytes can write `fused` gets no text to search at all:
    no stage can pass there (collect_stages stops after the first), so no notebook's JSON is
    parsed for its code, just as no Python file is parsed."""
    contents: dict[Path, bytes] = {}
    searchable: dict[Path, bytes] = {}
    failed: dict[Path, OSError] = {}
    broken: dict[Path, Exception] = {}  # a bug of ours on that file: one line, the run goes on
    for path in project.files:
        if fixed and path in fixed:
            contents[path] = fixed[path]
            continue
        try:
            contents[path] = observed.read_bytes(path)
        except OSError as error:
            failed[path] = error
        except Exception as error:  # noqa: BLE001
            broken[path] = error
    library = library_files(project.root, project.files)
    own = {path: data for path, data in contents.items() if path not in library}

    def mentions_of(path: Path) -> Mentions:
        """The file's `may_mention`, its adapter looked up once: the prefilter asks ~20 words
        of each file. `holds` itself where it is that (it raises nothing; the prefilter asks
        such texts joined), else a test that keeps what it raises as the file's error."""
        try:
            if adapter_for(path).may_mention is holds:
                return holds
        except Exception:  # noqa: BLE001 - raised again, and kept, when a word is asked
            pass
        looked_up: list[Mentions] = []  # the adapter's may_mention, once asked

        def mentions(data: bytes, word: bytes) -> bool:
            try:
                if not looked_up:
                    looked_up.append(adapter_for(path).may_mention)
                return looked_up[0](data, word)
            except Exception as error:  # noqa: BLE001
                broken.setdefault(path, error)
                return False

        return mentions

    texts = [(path, data, mentions_of(path)) for path, data in own.items()]
    searched = not prefilter or texts_hold_any(((d, m) for _, d, m in texts), (FUSED_WORD,))
    if not searched:  # no root: ACF011's reading is asked by the pipeline (of files not cleared)
        searched, collection.cleared = search_need(
            (path, data, read_as_config(path), mentions) for path, data, mentions in texts
        )
    for path in project.files:
        if path in failed:
            message = f"cannot read: {os_error_reason(failed[path])}"
            collection.errors.append(FileError(path, message, ErrorKind.READ))
            continue
        try:
            if path in broken:
                raise broken[path]
            if contents[path].find(b"\x00") >= 0:  # free for every file, unlike parsing
                raise SourceError("binary file (contains NUL bytes)")
            if searched and path not in library:
                searchable[path] = searchable_of(collection, path, contents[path])
        except SourceError as error:
            collection.errors.append(FileError(path, str(error), ErrorKind.READ))
            del contents[path]
        except Exception as error:  # noqa: BLE001 - a bug of ours on this file
            message = excerpt(f"internal error while reading: {error!r}", 300, quoted=False)
            collection.errors.append(FileError(path, message, ErrorKind.INTERNAL))
            contents.pop(path, None)
    return contents, searchable


def searchable_of(collection: Collection, path: Path, data: bytes) -> bytes:
    """What the prefilter reads of a file; a notebook's code (its JSON parsed) from the cache."""
    adapter = adapter_for(path)
    if collection.cache is None or not isinstance(adapter, NotebookSource):
        return adapter.searchable(path, data)
    return collection.cache.text("searchable", path, data, lambda: adapter.searchable(path, data))


def collect_stages(
    root: Path,
    contents: dict[Path, bytes],
    searchable: dict[Path, bytes],
    jobs: int,
    prefilter: bool,
    collection: Collection,
) -> None:
    """The stages of collect_project, then the project resolution (its module is imported
    once a file may take part: a project with nothing to find needs none)."""
    if not prefilter:
        from amp_clipfix.analysis.parse_pool import collect_files
        from amp_clipfix.analysis.project_resolve import resolve_collection

        collect_files(contents, list(searchable), jobs, collection)  # library code: never
        resolve_collection(root, contents, searchable, collection)
        return
    fused = passing(searchable, Stage.FUSED_OPTIMIZER, collection)
    if fused:  # else nothing to parse, and parse_pool is not imported
        from amp_clipfix.analysis.parse_pool import collect_files

        collect_files(contents, fused, jobs, collection)
    if not any(FUSED_WORD in data for data in searchable.values()) or not any(
        uses_lightning(data) for data in searchable.values()
    ):
        return  # no optimizer of the project is fused, or nothing uses Lightning
    from amp_clipfix.analysis.parse_pool import collect_files
    from amp_clipfix.analysis.project_resolve import (
        project_evaluator_of,
        resolve_collection,
        trainer_files,
    )

    unread = {path: data for path, data in searchable.items() if path not in collection.attempted}
    needed = trainer_files(root, contents, searchable, collection)
    if needed is not None:  # only the Trainers a followed fit links to a fused module
        unread_trainers = {p: d for p, d in unread.items() if p in needed or read_as_config(p)}
    else:
        unread_trainers = unread
    stage = passing(unread_trainers, Stage.TRAINER, collection)
    staged = set(stage)  # `in` a list of thousands, for each of thousands: 0.3 s on NeMo
    clipped = clip_test_of(collection)
    clips = {
        p for p, d in unread.items() if p not in staged and not read_as_config(p) and clipped(p, d)
    }

    def clipping() -> set[Path]:
        from amp_clipfix.analysis.resolve_base import clipping_files  # the evaluator: computed

        return clipping_files(project_evaluator_of(root, contents, searchable, collection), clips)

    if collection.queries is not None:
        found = collection.queries.run("clipping", sorted(clips, key=str), clipping)
    else:
        found = clipping()
    stage += sorted(found, key=list(unread).index)
    collect_files(contents, stage, jobs, collection)
    resolve_collection(root, contents, searchable, collection)


def clip_test_of(collection: Collection) -> Callable[[Path, bytes], bool]:
    """`may_clip` of a file's bytes, kept by its digest in the cache (file_tests.py): it is asked
    of every file no stage read, in every run (NeMo: 2,600 files, 31 MB searched for one word,
    ~40 M instructions of the pre-commit command after an edit to a module no query reads)."""
    from amp_clipfix.analysis.file_tests import file_tests

    stored = file_tests(collection.cache, "may_clip")
    if stored is None:
        return lambda path, data: may_clip(data)
    return lambda path, data: stored.result(path, data, lambda: may_clip(data))


def passing(
    searchable: Mapping[Path, bytes], stage: Stage, collection: Collection | None = None
) -> list[Path]:
    """The files whose adapter's prefilter says they may hold this stage's sites; a prefilter
    that fails on a file (a bug of ours) is one error line for it, and the file is not read."""
    passed = []
    for path, data in searchable.items():
        try:
            if prefiltered(path, data, stage, collection):
                passed.append(path)
        except Exception as error:  # noqa: BLE001
            if collection is None:
                raise
            if not any(known.path == path for known in collection.errors):
                message = excerpt(f"internal error in the prefilter: {error!r}", 300, quoted=False)
                collection.errors.append(FileError(path, message, ErrorKind.INTERNAL))
    return passed
