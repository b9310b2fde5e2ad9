"""The parsed files of one project as the collection stages fill them, and who is told of the
progress.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.kinds import FileError
from amp_clipfix.records import field, record
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import Language

if TYPE_CHECKING:
    from amp_clipfix.analysis.bodies import Bodies
    from amp_clipfix.analysis.cache import Cache
    from amp_clipfix.analysis.config_sites import Settings
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.queries import Queries
    from amp_clipfix.analysis.read import ReadFile
    from amp_clipfix.analysis.summary import Summary
    from amp_clipfix.models import FileSites
    from amp_clipfix.sources.base import Stage


class Progress(Protocol):
    """Told how many files a run looks at, once they are found, and how many it has looked at
    (read and filtered out, or parsed): a progress bar listens."""

    def planned(self, files: int) -> None: ...

    def done(self, files: int) -> None: ...


class NoProgress:
    def planned(self, files: int) -> None:
        pass

    def done(self, files: int) -> None:
        pass


@record
class Collection:
    """The parsed files of one project, filled stage by stage."""

    parsed: dict[Path, ReadFile] = field(default_factory=dict)
    attempted: set[Path] = field(default_factory=set)
    # The files this run parsed whole without error (none served by the cache): a search need
    # not check again that they parse (project_resolve.project_facts).
    parses: set[Path] = field(default_factory=set)
    progress: Progress = field(default_factory=NoProgress)
    errors: list[FileError] = field(default_factory=list)
    files_parsed: int = 0
    files_done: int = 0  # told to the progress bar
    unparsed: dict[Path, FileSites] = field(default_factory=dict)  # a trial resolution's sites
    cache: Cache | None = None
    queries: Queries | None = None  # the memoised project queries, with the cache (queries.py)
    # Per-file summaries (ast) and the evaluator over them, made once per run and shared by
    # the trial and the final resolution.
    summaries: dict[Path, Summary | None] = field(default_factory=dict)
    # files whose summary a cold run would have in `summaries` by now, not made yet (each
    # known to parse: reach.py `value_files`); made when the loader is asked
    promised: set[Path] = field(default_factory=set)
    # candidates a search read in the reused queries whose catch-up a run skipped, and whether
    # they parsed (certificate.py): the settle counts them as read (`LazyFiles.done`)
    parsed_before: dict[Path, bool] = field(default_factory=dict)
    # files no searching rule's word named, read for a rule, that do not parse: reported by the
    # settle, after the rest (project_resolve.project_facts)
    late: list[FileError] = field(default_factory=list)
    certify: bool = False  # the queries may skip the catch-up where it is certain (queries.py)
    evaluator: Evaluator | None = None
    # The project's files as read, for the rules with their own search (their facts), and the
    # documents those searches read that have no collected sites (a fix may change them); None:
    # read by a search whose answer was reused, its document loaded when a fix asks (`ReadFiles`).
    root: Path | None = None
    contents: dict[Path, bytes] = field(default_factory=dict)
    searchable: dict[Path, bytes] = field(default_factory=dict)
    # The files whose read bytes hold no searching word but `precision` (prefilter.search_need):
    # the pipeline does not ask their searchable texts for the other words again.
    cleared: frozenset[Path] = frozenset()
    searched: dict[Path, ReadFile | None] = field(default_factory=dict)
    # Each YAML config's sites as its read gave them (None: it does not compose), before any
    # resolution: a rule that reads a config's sites takes them here instead of composing the
    # file again (ruamel's composer is most of the cost of a tree of Hydra configs).
    config_sites: dict[Path, FileSites | None] = field(default_factory=dict)
    # And their trainer settings from the same composition (config_sites.read_config).
    config_settings: dict[Path, Settings] = field(default_factory=dict)
    # Each prefilter stage's answer per file, asked more than once in a run (`prefiltered`),
    # with the bytes it was asked of.
    prefilters: dict[tuple[Path, Stage], tuple[bytes, bool]] = field(default_factory=dict)
    # apply's fixpoint (pipeline.py): each file's parse outcome with the bytes it was read
    # from (and whether the cache served it), kept by a round and given to the next, which
    # parses only the files whose bytes a fix changed; None: not kept (check).
    outcomes: dict[Path, tuple[bytes, object, bool]] | None = None
    # The function bodies of this run's summaries that nothing has read (analysis/bodies.py),
    # made with the first summary its loader parses (start-up imports no `ast`).
    bodies: Bodies | None = None


def read_as_config(path: Path) -> bool:
    """Read as a config, not as Python code (the adapter decides, not the suffix)."""
    return adapter_for(path).language is not Language.PYTHON


def prefiltered(path: Path, data: bytes, stage: Stage, collection: Collection | None) -> bool:
    """The file's adapter's prefilter for `stage` (raising what it raises), once per run and
    file and text: the Trainer stage's is asked by the trial (project_resolve's
    trainer_candidates) and again for the files it reads (project_collect.passing). Kept by
    file and stage with the bytes it was asked of, which are compared, never hashed: a key
    holding the text made the first ask hash every file's bytes (28.5 MB of NeMo's 36 MB,
    ~9 ms of a pre-commit run that tests nothing again)."""
    if collection is None:
        return adapter_for(path).prefilter(stage)(data)
    key = (path, stage)
    asked = collection.prefilters.get(key)
    if asked is not None and (asked[0] is data or asked[0] == data):
        return asked[1]
    test = adapter_for(path).prefilter(stage)
    if collection.cache is None:
        known = test(data)
    else:  # by the file's bytes (a run without the cache imports no hashing)
        name = f"prefilter {stage.name}"
        stored = collection.cache.per_file.get(name)
        if stored is None:  # the run's first ask: an import statement run per file cost ~4 K
            from amp_clipfix.analysis.file_tests import file_tests  # instructions (3,300 NeMo)

            stored = file_tests(collection.cache, name)
        known = stored.result(path, data, lambda: test(data))  # type: ignore[union-attr]
    collection.prefilters[key] = (data, known)
    return known


class ReadFiles(Mapping[Path, "ReadFile"]):
    """The documents a fix may change: the collected files' and those the searches read, as
    `{**searched, **parsed}`. A document a reused search read (`searched[path]` is None) is
    loaded from the same bytes on first use: a warm run loads only those holding a finding,
    not every document every reused search read (on NeMo, 16 notebooks a run)."""

    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    def __getitem__(self, path: Path) -> ReadFile:
        collection = self.collection
        parsed = collection.parsed.get(path)
        if parsed is not None:
            return parsed
        read = collection.searched[path]
        if read is None:
            from amp_clipfix.analysis.read import ReadFile
            from amp_clipfix.models import FileSites

            document = adapter_for(path).load(path, collection.contents[path])
            read = collection.searched[path] = ReadFile(document, FileSites(path))
        return read

    def __iter__(self) -> Iterator[Path]:
        return iter({**self.collection.searched, **self.collection.parsed})

    def __len__(self) -> int:
        return len({**self.collection.searched, **self.collection.parsed})
