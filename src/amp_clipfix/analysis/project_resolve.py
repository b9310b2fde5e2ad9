"""The project resolution over a collection's per-file sites (cached per project), the project's one
evaluator, and the facts the rules with their own search read.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis import recording
from amp_clipfix.analysis.collection import Collection, prefiltered, read_as_config
from amp_clipfix.analysis.parse_depth import frame_depth, handed_tree, may_parse, parse_at_depth
from amp_clipfix.analysis.parse_pool import parse_and_collect, parse_error
from amp_clipfix.analysis.questions import Unparsed
from amp_clipfix.analysis.search_texts import indexed_test, notebook_code, same_bytes
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import excerpt, is_library
from amp_clipfix.project.version import Target
from amp_clipfix.records import replace
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import Document, SourceError, Stage
from amp_clipfix.sources.python import PythonSource
from amp_clipfix.sources.shared_pieces import any_word
from amp_clipfix.sources.text import decodes_to_itself

if TYPE_CHECKING:
    import ast

    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import ProjectFacts
    from amp_clipfix.analysis.read import ReadFile
    from amp_clipfix.analysis.summary import Summary
    from amp_clipfix.models import FileSites


DEEP_STACK = 20_000  # Python frames the resolution and the rules may use (the evaluator's bound)


@contextlib.contextmanager
def deep_stack() -> Iterator[None]:
    """Run with room for DEEP_STACK frames: the evaluator stops nesting well before
    (frame.MAX_NESTING), so what is left to Python's own limit is a backstop."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEP_STACK))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def stage_error(stage: str, failure: BaseException, path: Path | None) -> FileError:
    """One error line for a stage that failed on a project (or a file): what a RecursionError
    means, else the exception; the run goes on with what the other stages made."""
    if isinstance(failure, RecursionError):
        message = f"{stage} gave up (code nested too deeply)"
    else:
        message = f"internal error in {stage}: {failure!r}"
    return FileError(path, excerpt(message, 300, quoted=False), ErrorKind.INTERNAL)


def trainer_files(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> set[Path] | None:
    """A first resolution over the fused optimizers alone tells which Trainer files matter;
    None (every one) without it when no file is left that it could leave out."""
    if not trainer_candidates(searchable, collection):
        return None  # the Trainer stage reads the same files whatever the trial says
    if collection.queries is None:
        return trial_trainer_files(root, contents, searchable, collection)
    parsed = dict(collection.parsed)  # as now: the query may be computed again later
    sites = sorted(((path, read.sites) for path, read in parsed.items()), key=lambda i: str(i[0]))
    return collection.queries.run(
        "trial", sites, lambda: trial_trainer_files(root, contents, searchable, collection, parsed)
    )


def trainer_candidates(searchable: Mapping[Path, bytes], collection: Collection) -> bool:
    """Whether a Python file not read yet may configure a Trainer (its prefilter says so): the
    only files the trial's answer can leave out of the Trainer stage (configs are read
    whatever it says). A prefilter that fails on a file counts it in (the stage reports it)."""
    for path, data in searchable.items():
        if path in collection.attempted or read_as_config(path):
            continue
        try:
            if prefiltered(path, data, Stage.TRAINER, collection):
                return True
        except Exception:  # noqa: BLE001 - the stage's own call reports it
            return True
    return False


def trial_trainer_files(
    root: Path,
    contents: dict[Path, bytes],
    searchable: dict[Path, bytes],
    collection: Collection,
    parsed: dict[Path, ReadFile] | None = None,
) -> set[Path] | None:
    from amp_clipfix.analysis.resolve import trainer_files_needed

    trial = Collection(
        parsed=dict(collection.parsed if parsed is None else parsed),
        cache=collection.cache,
        queries=None,  # the trial is one query (its own resolution is not stored apart)
        summaries=collection.summaries,
        evaluator=project_evaluator_of(root, contents, searchable, collection),
    )
    resolve_collection(root, contents, searchable, trial, parse=False)
    if trial.errors:
        return None
    resolved = {path: file.sites for path, file in trial.parsed.items()}
    return trainer_files_needed({**trial.unparsed, **resolved})


def summary_loader(
    root: Path, contents: dict[Path, bytes], collection: Collection
) -> Callable[..., Summary | None]:
    """Summaries on first use, from the reader's tree when the file was read (parsed once)."""
    from amp_clipfix.analysis.bodies import HELD_LINES, Bodies
    from amp_clipfix.analysis.summary import summarise

    if collection.bodies is None:
        collection.bodies = Bodies()
    bodies = collection.bodies

    def load(
        path: Path, tested: tuple[str, ast.Module] | None = None, text: str | None = None
    ) -> Summary | None:
        """`tested`: a text and the tree a test parsed of it (kept_call_test.py), used in
        place of a parse of the same text where the parse would have as many frames. `text`:
        the file's text when the caller has decoded it already (its document's), not decoded
        again."""
        if path not in collection.summaries:
            bodies.let_go_older(HELD_LINES)  # what the modules loaded so far did not need
            read = collection.parsed.get(path)
            if read is not None and read.syntax is not None:
                summary = summarise(root, path, read.document.text, read.syntax, contents.get(path))
                collection.summaries[path] = summary
                return summary
            if text is None:
                try:
                    text = adapter_for(path).load(path, contents[path]).text
                except (SourceError, KeyError):
                    return None
            tree = handed_tree(text, tested)
            collection.summaries[path] = summarise(
                root, path, text, tree, contents[path], bodies, unheld=tree is not None
            )
        return collection.summaries[path]

    return load


def project_evaluator_of(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> Evaluator:
    """The project's evaluator, made once per run whether or not a resolution comes from the
    cache: the searches of the collection stages ask it too, and must get the same answers."""
    from amp_clipfix.analysis.resolve import project_evaluator

    if collection.evaluator is None:
        python = {path: data for path, data in searchable.items() if not read_as_config(path)}
        loader = summary_loader(root, contents, collection)
        collection.evaluator = project_evaluator(root, python, loader)
        collection.evaluator.promise_load = collection.promised.add
        if collection.queries is not None:  # what the queries read is noted
            from amp_clipfix.analysis.word_store import WordStore

            evaluator = collection.evaluator
            evaluator.contents = collection.queries.recording(evaluator.contents)
            evaluator.contents.scanned = True
            evaluator.word_index.store = WordStore(collection.queries.cache)
            from amp_clipfix.analysis.certificate import own_footprint

            collection.queries.made = own_footprint(evaluator)  # as made (`Watch.effects`)
    return collection.evaluator


def isolated_evaluator_of(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> Evaluator:
    """A new evaluator for one computation of its own (candidate_answers.py): no memo, budget
    or cycle of another. It shares with the project's only what is a function of the files'
    bytes and list, each use noted where it is made: the summaries' loader (its cache by path),
    the module names, the word index and the noted texts."""
    from amp_clipfix.analysis.certificate import SHARED_FIELDS
    from amp_clipfix.analysis.evaluate import Evaluator

    shared = project_evaluator_of(root, contents, searchable, collection)
    fresh = Evaluator({}, shared.load, {})
    for name in SHARED_FIELDS:
        setattr(fresh, name, getattr(shared, name))
    return fresh


def resolve_collection(
    root: Path,
    contents: dict[Path, bytes],
    searchable: dict[Path, bytes],
    collection: Collection,
    parse: bool = True,
) -> None:
    """The project resolution (analysis/resolve.py) over the per-file sites; files that gain
    sites are read too (libcst parses only the files a fix changes, in fixed_file)."""
    from amp_clipfix.analysis.read import ReadFile, in_cell

    python = {path: data for path, data in searchable.items() if not read_as_config(path)}
    load = summary_loader(root, contents, collection)

    files = {path: parsed.sites for path, parsed in collection.parsed.items()}

    def compute() -> dict[Path, FileSites]:
        from amp_clipfix.analysis.resolve import resolve  # the evaluator: when computed

        with deep_stack():
            evaluator = project_evaluator_of(root, contents, searchable, collection)
            return resolve(root, files, python, load, evaluator, trial=not parse)

    try:
        if collection.queries is not None:
            stage = "resolve" if parse else "resolve-trial"  # a trial searches less
            inputs = sorted(files.items(), key=lambda i: str(i[0]))
            resolved = collection.queries.run(stage, inputs, compute)
        else:
            resolved = compute()
    except Exception as failure:  # noqa: BLE001 - the files' own sites still stand
        collection.errors.append(stage_error("the project resolution", failure, root))
        return
    for path, sites in resolved.items():
        parsed = collection.parsed.get(path)
        if parsed is not None and parsed.sites == sites:
            continue
        if not parse:
            if parsed is not None:
                collection.parsed[path] = replace(parsed, sites=sites)
            else:
                collection.unparsed[path] = sites
            continue
        fixable = any(site.fixable for site in sites.sites)
        if parsed is None and not fixable:  # fit calls, unfixable sites: no libcst needed
            try:
                document = adapter_for(path).load(path, contents[path])
            except SourceError:
                continue
            collection.parsed[path] = ReadFile(document, sites)
            continue
        if parsed is None:  # the libcst tree a fix needs is parsed by fixed_file
            fresh, error = parse_and_collect(path, contents[path])
            if fresh is None:
                if error is not None and path not in collection.attempted:
                    collection.errors.append(error)
                continue
            parsed = fresh
        if parsed.document.locate(1)[0] is not None:  # a notebook: sites name their cell
            sites = replace(
                sites,
                sites=tuple(
                    site if site.cell is not None else in_cell(site, parsed.document)
                    for site in sites.sites
                ),
            )
        collection.parsed[path] = replace(parsed, sites=sites)


def end_analysis(collection: Collection, facts: ProjectFacts | None = None) -> None:
    """Once the rules have found what they find, before the fixes are made: let go of the
    evaluator (its memos and the values they hold), of what the rules' facts read, and of the
    scopes a memo of the evaluator's parts keeps (reaching.declared_names: up to 64 whole
    trees, which would outlive the project). The trees stay with the summaries (a later round
    of `apply` reuses those of the files it did not change; release_analysis lets them go)."""
    from amp_clipfix.analysis.reaching import declared_names
    from amp_clipfix.sources.prefilter import forget_texts

    if collection.bodies is not None:
        collection.bodies.forget()  # the list of unread bodies holds their trees
    collection.evaluator = None
    if facts is not None:
        facts.release()
    declared_names.cache_clear()
    forget_texts()


def release_analysis(collection: Collection) -> None:
    """Let go of all a project's analysis holds once its findings and fixes are made: the
    summaries with their `ast` trees (most of a run's memory), the parsed files, the bytes,
    and the query cache's hold on the collection (a cycle, which the run's disabled garbage
    collector would never break). A run over several projects then peaks at its largest
    project, not at their sum. Not for the last project of a command: the process ends right
    after without freeing anything, and freeing millions of nodes costs CPU (0.3 s on
    NeMo's)."""
    end_analysis(collection)
    collection.queries = None
    collection.summaries, collection.parsed, collection.searched = {}, {}, {}
    collection.promised = set()
    collection.contents, collection.searchable, collection.outcomes = {}, {}, None
    collection.config_sites, collection.config_settings, collection.unparsed = {}, {}, {}


def project_facts(
    collection: Collection, target: Target, words: tuple[bytes, ...]
) -> ProjectFacts | None:
    """The files and facts the rules with their own search read: the project's Python
    documents that hold one of their `words` (library code left out), each parsed once when a
    search first asks for it (the collection's tree when it has one), and the project's one
    evaluator. `ProjectFacts.settle` then reports the word files that do not parse which a
    question asked would read (questions.py: why no other can matter), read or not, in the
    project's order."""
    if collection.root is None or not words:
        return None
    from amp_clipfix.analysis.facts import FileFacts, LazyFiles, ProjectFacts
    from amp_clipfix.models import FileSites

    root, contents, searchable = collection.root, collection.contents, collection.searchable
    load = summary_loader(root, contents, collection)
    noted: Mapping[Path, bytes] = contents  # the reads of the rules' query (queries.py)
    if collection.queries is not None:
        noted = collection.queries.recording(contents)
    configs: dict[Path, Document] = {}
    documents: dict[Path, Document | None] = {}
    texts: dict[Path, bytes | None] = {}  # as FileFacts.data: what `with_words` tests
    late = collection.late  # files no word named that do not parse, reported after the rest

    def document_of(path: Path) -> Document | None:
        recording.read(noted, path)
        return document(path)

    def document(path: Path) -> Document | None:
        if path not in documents:
            parsed = collection.parsed.get(path)
            try:
                documents[path] = (
                    parsed.document if parsed else adapter_for(path).load(path, contents[path])
                )
            except (SourceError, KeyError):
                documents[path] = None  # the collection reports what cannot be read
        return documents[path]

    def text_of(path: Path) -> bytes | None:
        if path not in texts:
            code = notebook_code(path, searchable)
            if code is not None:  # its document's text, unread (a warm run's listing)
                texts[path] = code
                return code
            data = contents.get(path)
            if (
                data is not None
                and isinstance(adapter_for(path), PythonSource)
                and decodes_to_itself(data)
            ):
                texts[path] = data  # its document's text in UTF-8, not decoded for the test
                return data
            read = document(path)  # whether it holds a word is noted (LazyFiles.with_words)
            texts[path] = None if read is None else same_bytes(read.text, data)
        return texts[path]

    def read(path: Path) -> FileFacts | None:
        from amp_clipfix.analysis.read import ReadFile  # with the site collector: on a read

        if path not in searchable or is_library(path):
            return None
        document = document_of(path)
        if read_as_config(path):  # a YAML config: a rule reads its sites and edits its tokens
            if document is not None:
                configs[path] = document
                if path not in collection.parsed:
                    collection.searched[path] = ReadFile(document, FileSites(path))
            return None
        if document is None:
            return None
        tested = lazy.tested.pop(path, None)
        text = document.text  # decoded once: its summary is parsed from it
        summary = parse_at_depth(lambda: load(path, tested, text), start)
        if summary is None:
            if path not in lazy.known and not reported(path):
                late.append(parse_error(path, contents[path]))
            return None
        if path not in collection.parsed:
            collection.searched[path] = ReadFile(document, FileSites(path))
        return FileFacts(document, summary)

    def reported(path: Path) -> bool:
        return any(error.path == path for error in (*collection.errors, *late))

    def settle() -> None:
        for words, where in lazy.questions:  # a file that (now) holds one, passes, may fail
            asked.words(words, Unparsed(where))
        before = collection.parsed_before  # read by searches the run did not compute again
        for path in lazy.candidates if lazy.questions or lazy.done or before else ():
            if path in lazy.done or path in before:
                parsed = lazy.done[path] is not None if path in lazy.done else before[path]
                failed = not parsed and document_of(path) is not None
            elif not lazy.questions.want(path, text_of):
                continue  # no question asked would read it: its parse changes no answer
            elif path in collection.parses or parsed_whole(collection, path):
                recording.read(noted, path)  # that it parses is read from its text
                failed = False  # the collection or the evaluator parsed it whole in this run
            else:
                document = document_of(path)
                failed = document is not None and not may_parse(document.text) and not read(path)
            if failed and not reported(path):
                collection.errors.append(parse_error(path, contents[path]))
        collection.errors.extend(error for error in late if not reported_before(error))
        late.clear()

    def reported_before(error: FileError) -> bool:
        return any(known.path == error.path for known in collection.errors)

    # How deep `read` ran when it read every word file here first, from a comprehension.
    start = frame_depth() + 2
    # Each word once, and none that holds another (its files hold that one too): the same
    # files, in fewer scans of the tree's text.
    unique = set(words)
    fewest = tuple(w for w in dict.fromkeys(words) if not any(o != w and o in w for o in unique))
    holds_any = any_word(fewest)
    stored = None
    if collection.cache is not None:  # each file's answer kept by its bytes (file_tests.py)
        from amp_clipfix.analysis.file_tests import file_tests

        stored = file_tests(collection.cache, f"candidate {fewest!r}")

    def holds_word(path: Path, data: bytes) -> bool:
        if stored is None:
            return holds_any(data)
        return stored.result(path, data, functools.partial(holds_any, data))

    for path, data in searchable.items():  # the configs now: the rules' queries read them
        if read_as_config(path) and not is_library(path) and holds_word(path, data):
            read(path)

    def python() -> list[Path]:
        """The Python files holding a word, scanned when a search first asks (a run whose
        rules' queries are all reused never does: a quarter of such a run on diffusers); only
        the files changed since a run stored the answers are tested (file_tests.py); without a
        cache, the word index tells which texts may hold the bounded words (indexed_test)."""
        test = (stored is None and indexed_test(collection, fewest)) or holds_word
        return [
            path
            for path, data in searchable.items()
            if not read_as_config(path) and not is_library(path) and test(path, data)
        ]

    asked = recording.Candidates(noted, (recording.holds_any(fewest), ("fn", "candidate")))
    lazy = LazyFiles(python, text_of, read, asked, functools.partial(recording.read, noted))
    return ProjectFacts(
        root,
        target,
        lazy,
        lambda: project_evaluator_of(root, contents, searchable, collection),
        isolated_of=lambda: isolated_evaluator_of(root, contents, searchable, collection),
        loader=read,
        configs=configs,
        config_sites=collection.config_sites,
        config_settings=collection.config_settings,
        settle=settle,
    )


def parsed_whole(collection: Collection, path: Path) -> bool:
    """The file was parsed in this run (or a round before), or a cold run's would have been
    by now (a summary promised: known to parse, reach.py `value_files`)."""
    return path in collection.promised or collection.summaries.get(path) is not None


def _candidate(path: Path, data: bytes) -> bool:
    """Not library code nor a config: a searching rule's candidate when it holds a word."""
    return not is_library(path) and not read_as_config(path)


recording.PREDICATES["candidate"] = _candidate
