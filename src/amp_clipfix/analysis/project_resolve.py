"""The project resolution over a collection's per-file sites (cached per project), the project's one
evaluator, and the facts the rules with their own search read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collection import Collection, read_as_config
from amp_clipfix.analysis.parse_pool import parse_and_collect, parse_error
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import is_library
from amp_clipfix.project.version import Target
from amp_clipfix.records import replace
from amp_clipfix.sources import adapter_for
from amp_clipfix.sources.base import Document, SourceError

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import ProjectFacts
    from amp_clipfix.analysis.summary import Summary


def trainer_files(
    root: Path, contents: dict[Path, bytes], searchable: dict[Path, bytes], collection: Collection
) -> set[Path] | None:
    """A first resolution over the fused optimizers alone tells which Trainer files matter."""
    from amp_clipfix.analysis.resolve import trainer_files_needed

    trial = Collection(
        parsed=dict(collection.parsed),
        cache=collection.cache,
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
) -> Callable[[Path], Summary | None]:
    """Summaries on first use, from the reader's tree when the file was read (parsed once)."""
    from amp_clipfix.analysis.summary import summarise

    def load(path: Path) -> Summary | None:
        if path not in collection.summaries:
            read = collection.parsed.get(path)
            if read is not None and read.syntax is not None:
                summary = summarise(root, path, read.document.text, read.syntax)
                collection.summaries[path] = summary
                return summary
            try:
                text = adapter_for(path).load(path, contents[path]).text
            except (SourceError, KeyError):
                return None
            collection.summaries[path] = summarise(root, path, text)
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
    return collection.evaluator


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
    from amp_clipfix.analysis.resolve import resolve

    python = {path: data for path, data in searchable.items() if not read_as_config(path)}
    load = summary_loader(root, contents, collection)

    files = {path: parsed.sites for path, parsed in collection.parsed.items()}
    cache, key = collection.cache, ""
    if cache is not None:
        stage = "resolve" if parse else "resolve-trial"  # a trial searches less
        key = cache.project_key(stage, python, sorted(files.items(), key=lambda i: str(i[0])))
    cached = cache.load(key) if cache is not None else None
    if isinstance(cached, dict):
        resolved = cached
    else:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            evaluator = project_evaluator_of(root, contents, searchable, collection)
            resolved = resolve(root, files, python, load, evaluator, trial=not parse)
        except RecursionError:
            message = "the project resolution gave up (code nested too deeply)"
            collection.errors.append(FileError(None, message, ErrorKind.INTERNAL))
            return
        except Exception as failure:  # noqa: BLE001 - the files' own sites still stand
            message = f"internal error in the project resolution: {failure!r}"
            collection.errors.append(FileError(None, message, ErrorKind.INTERNAL))
            return
        finally:
            sys.setrecursionlimit(limit)
        if cache is not None:
            cache.store(key, resolved)
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


def project_facts(
    collection: Collection, target: Target, words: tuple[bytes, ...]
) -> ProjectFacts | None:
    """The parsed files and facts the rules with their own search read: the project's Python
    documents that hold one of their `words` (library code left out), each parsed once (the
    collection's tree when it has one), and the project's one evaluator."""
    if collection.root is None or not words:
        return None
    from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
    from amp_clipfix.analysis.read import ReadFile
    from amp_clipfix.models import FileSites

    root, contents, searchable = collection.root, collection.contents, collection.searchable
    load = summary_loader(root, contents, collection)
    configs: dict[Path, Document] = {}

    def read(path: Path) -> FileFacts | None:
        if path not in searchable or is_library(path):
            return None
        parsed = collection.parsed.get(path)
        if read_as_config(path):  # a YAML config: a rule reads its sites and edits its tokens
            try:
                config = parsed.document if parsed else adapter_for(path).load(path, contents[path])
            except (SourceError, KeyError):
                return None  # the collection reports what cannot be read
            configs[path] = config
            if parsed is None:
                collection.searched[path] = ReadFile(config, FileSites(path))
            return None
        try:
            document = parsed.document if parsed else adapter_for(path).load(path, contents[path])
        except (SourceError, KeyError):
            return None  # the collection reports what cannot be read
        summary = load(path)
        if summary is None:
            if not any(error.path == path for error in collection.errors):
                collection.errors.append(parse_error(path, contents[path]))
            return None
        if parsed is None:
            collection.searched[path] = ReadFile(document, FileSites(path))
        return FileFacts(document, summary)

    files = {
        path: found
        for path, data in searchable.items()
        if any(word in data for word in words) and (found := read(path)) is not None
    }
    return ProjectFacts(
        root,
        target,
        files,
        lambda: project_evaluator_of(root, contents, searchable, collection),
        loader=read,
        configs=configs,
    )
