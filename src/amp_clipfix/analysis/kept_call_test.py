"""A search's test of a candidate file that asks its syntax too: whether `library_calls` would
evaluate a call there at all (calls.written_calls), not only whether the text may write one.

`calls.CallTest` passes a file whose text holds a `**` spread and names a Trainer (on NeMo,
`megatron_base_model.py`: `Float16Wrapper(**args)`), so the search parses it and its query
reads the whole file: a one-line edit there computes the query again (ACF013, then the
settle). `library_calls` evaluates only the calls `written_calls` keeps from the module's
syntax; a file with none gives the search nothing, whatever the rest of the project holds.
`KeptCallTest` refuses such a file. A refused file is not read: a memoised query notes the
test (recording.Candidates), and a later run asks it again of a changed file only, so an edit
that writes no such call keeps the query's answer (issue 35, session 34).

The answer is a function of the path and the text alone, as every noted test must be: the
module is summarised from the text (`fresh_summary`, with a fixed recursion budget, so that
how deep the caller runs does not decide whether it parses), or taken from the run's parse of
the same document where one succeeded (the same tree: no second parse). A text that does not
parse here passes: the search reads the file and reports it as it did.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from amp_clipfix.analysis.calls import CallTest, Keywords, written_calls
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.lazy_files import LazyFiles
from amp_clipfix.analysis.parse_depth import TEST_FRAMES, with_frames
from amp_clipfix.analysis.recording import PREDICATES, Condition
from amp_clipfix.analysis.summary import Summary, summarise

KEPT_CALL_TEST = "kept_call_test"  # KeptCallTest's predicate (recording.PREDICATES)


class KeptCallTest(CallTest):
    """`CallTest`, and a parse of the file keeps a call `library_calls` would evaluate.
    `parsed(path)`: the run's summary of the file where it parsed already (None: parse here).
    `tested`: where the tree parsed here of a file let through is handed to the file's read
    with the text parsed (LazyFiles.tested: the search reads it next; no second parse)."""

    def __init__(
        self,
        root: Path,
        qualified: Collection[str],
        keywords: Keywords | None = None,
        parsed: Callable[[Path], Summary | None] = lambda path: None,
        tested: dict[Path, tuple[str, ast.Module]] | None = None,
    ) -> None:
        super().__init__(root, qualified, keywords)
        self.parsed, self.tested = parsed, tested

    def __call__(self, path: Path, data: bytes) -> bool:
        if not super().__call__(path, data):
            return False
        module = self.parsed(path)
        fresh = module is None
        if module is None:
            module = fresh_summary(self.root, path, data)
        if module is None:
            return True  # it does not parse here: read it, as the search always did
        try:
            passes = bool(written_calls(module, self.qualified, self.keywords))
        except RecursionError:
            return True
        if passes and fresh and self.tested is not None:  # no node of it is held past here
            self.tested[path] = (data.decode("utf-8"), module.tree)
        return passes

    @property
    def condition(self) -> Condition:
        _, _, *arguments = super().condition
        return ("fn", KEPT_CALL_TEST, *arguments)


def fresh_summary(root: Path, path: Path, data: bytes) -> Summary | None:
    """The module's summary from its text (its document's, as UTF-8), parsed with
    `TEST_FRAMES` frames above this one; None when it does not parse so."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return with_frames(TEST_FRAMES, lambda: summarise(root, path, text))
    except RecursionError:
        return None


@functools.lru_cache(maxsize=64)
def kept_call_test(
    root: str, qualified: tuple[str, ...], keywords: tuple[str, ...] | None, any_of: bool
) -> KeptCallTest:
    return KeptCallTest(
        Path(root), qualified, None if keywords is None else Keywords(*keywords, any_of=any_of)
    )


def kept_call_files(
    facts: ProjectFacts,
    words: Sequence[bytes],
    qualified: Collection[str],
    keywords: Keywords | None = None,
) -> Iterator[FileFacts]:
    """`calls.library_call_files`, each file tested by `KeptCallTest`: only the files where
    `library_calls` may find a call are parsed (and read)."""
    tested = facts.files.tested if isinstance(facts.files, LazyFiles) else None
    test = KeptCallTest(facts.root, qualified, keywords, parsed(facts), tested)
    return facts.with_words(*words, where=test)


def parsed(facts: ProjectFacts) -> Callable[[Path], Summary | None]:
    """The summary of a file the run parsed already (a search's candidate or a loaded module),
    looked up without asking for it (a lookup is no read: the answer is the text's)."""
    files = facts.files

    def summary_of(path: Path) -> Summary | None:
        if isinstance(files, LazyFiles):
            found = files.done.get(path)
            found = files.loaded.get(path) if found is None else found
        else:
            found = files.get(path)
        return None if found is None else found.summary

    return summary_of


PREDICATES[KEPT_CALL_TEST] = lambda path, data, *arguments: kept_call_test(*arguments)(path, data)
