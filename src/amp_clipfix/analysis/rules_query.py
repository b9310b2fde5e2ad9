"""The rules' findings of one project as a memoised query (queries.py).

Its inputs: every file's collected sites, the target release, the rules chosen, the files that
hold a searching rule's words, the configs read and their sites, and the errors reported so
far. What the searches read (files' texts, summaries, scans) is noted as they run. Its answer:
the findings, the errors the searches added (files that do not parse), and the documents they
read (a fix may change them), which a reuse puts back as the searches left them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.collection import Collection
from amp_clipfix.analysis.facts import LazyFiles, ProjectFacts
from amp_clipfix.kinds import FileError

if TYPE_CHECKING:
    from amp_clipfix.models import FileSites, Finding
    from amp_clipfix.project.version import Target


def rules_query(
    collection: Collection,
    files: Sequence[FileSites],
    target: Target,
    chosen: Sequence[object],
    facts: ProjectFacts,
    compute: Callable[[], list[Finding]],
) -> list[Finding]:
    """`compute()` (the rules and the settling of their facts), or its stored answer."""
    queries = collection.queries
    assert queries is not None
    candidates = facts.files.candidates if isinstance(facts.files, LazyFiles) else list(facts.files)
    inputs = (
        sorted(files, key=lambda f: str(f.path)),
        target,
        [getattr(rule, "code", "") for rule in chosen],
        list(candidates),
        sorted(facts.configs, key=str),
        sorted(facts.config_sites.items(), key=lambda item: str(item[0])),
        list(collection.errors),
    )

    def answer() -> tuple[list[Finding], tuple[FileError, ...], tuple[Path, ...]]:
        errors, searched = len(collection.errors), set(collection.searched)
        linked = compute()
        added = tuple(collection.errors[errors:])
        return linked, added, tuple(path for path in collection.searched if path not in searched)

    def replay(stored: tuple[list[Finding], tuple[FileError, ...], tuple[Path, ...]]) -> None:
        from amp_clipfix.analysis.read import ReadFile
        from amp_clipfix.models import FileSites
        from amp_clipfix.sources import adapter_for

        _, added, searched = stored
        collection.errors.extend(added)
        for path in searched:
            document = adapter_for(path).load(path, collection.contents[path])
            collection.searched[path] = ReadFile(document, FileSites(path))

    return list(queries.run("rules", inputs, answer, replay)[0])
