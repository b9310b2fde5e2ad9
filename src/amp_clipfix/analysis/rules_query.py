"""The rules' findings of one project as memoised queries (queries.py): one per searching rule,
in the rules' order, then one for the settling of their facts.

The first one's inputs: every file's collected sites, the target release, the rules chosen, the
configs read and their sites, and the errors reported so far; each later one chains it
(queries.py). What each search reads is noted as it runs: the files it parses, the scans, and
what it asks of the candidate files (those holding a searching rule's word:
`recording.Candidates`), so an edit runs again the rule that read the file and those after it
(they may reuse what the evaluator learnt for it), and reuses the rules before. Each answer:
the rule's findings, the errors its search added (files that do not parse), and the documents
it read (a fix may change them), which a reuse notes in the search's order; each is loaded
when a fix asks for it (collection.ReadFiles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.analysis.collection import Collection
from amp_clipfix.analysis.facts import ProjectFacts
from amp_clipfix.kinds import FileError

if TYPE_CHECKING:
    from amp_clipfix.models import FileSites, Finding
    from amp_clipfix.project.version import Target

Answer = tuple[list["Finding"], tuple[FileError, ...], tuple[Path, ...]]


class Searching(Protocol):
    code: str
    asks_facts: bool


def rules_query(
    collection: Collection,
    files: Sequence[FileSites],
    target: Target,
    chosen: Sequence[Searching],
    facts: ProjectFacts,
    check: Callable[[Searching], list[Finding]],
) -> list[Finding]:
    """Each chosen rule's `check(rule)` (a rule without a search directly, it reads the sites
    alone), then the settling of the facts; each search's answer stored or computed."""
    queries = collection.queries
    assert queries is not None
    if queries.watch is not None:  # what each search leaves in the facts (certificate.py)
        queries.watch.facts = facts
    inputs: object = (
        sorted(files, key=lambda f: str(f.path)),
        target,
        [rule.code for rule in chosen],
        sorted(facts.configs, key=str),
        sorted(facts.config_sites.items(), key=lambda item: str(item[0])),
        list(collection.errors),
    )

    def answer(compute: Callable[[], list[Finding]]) -> Callable[[], Answer]:
        def answered() -> Answer:
            errors, searched = len(collection.errors), set(collection.searched)
            linked = compute()
            added = tuple(collection.errors[errors:])
            return linked, added, tuple(p for p in collection.searched if p not in searched)

        return answered

    def again(compute: Callable[[], object]) -> Callable[[], None]:
        """The computation for the evaluator's sake: the errors it reports are reported."""

        def computed() -> None:
            errors = len(collection.errors)
            compute()
            del collection.errors[errors:]

        return computed

    def replay(stored: Answer) -> None:
        _, added, searched = stored
        collection.errors.extend(added)
        for path in searched:  # its document loaded when a fix asks (collection.ReadFiles)
            collection.searched.setdefault(path, None)

    def asked(name: str, compute: Callable[[], list[Finding]]) -> list[Finding]:
        nonlocal inputs
        stated, inputs = inputs, ()  # the later queries chain the first one's inputs
        # a search leaves the files it loaded for the later ones (facts.LazyFiles.loaded); one
        # that leaves the project's evaluator as it was leaves them that alone (`detach`)
        found = queries.run(
            name, stated, answer(compute), replay, again(compute), stateful=True, detach=True
        )
        return list(found[0])

    findings: list[Finding] = []
    for rule in chosen:
        if not rule.asks_facts:
            findings.extend(check(rule))
            continue
        findings.extend(asked(f"rule {rule.code}", lambda rule=rule: check(rule)))  # type: ignore[misc]
    if facts.settle is not None:
        settle = facts.settle
        asked("settle", lambda: settle() or [])
    return findings
