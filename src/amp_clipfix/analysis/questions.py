"""The questions a run's searches asked of the project's word files, and which files they want.

A question is one `with_words` call (facts.LazyFiles): its words and its own text test (the gate
a search applies to a file's text before it parses it, recording.TextTest), whether the search
read all its files or stopped early. Its answer reads only files that hold one of the words and
pass the test. A file that does not parse is reported when a question asked would read it
(project_resolve.project_facts's settle): any other file, whatever its parse would give (a tree,
or none), changes no answer of this run, so its error is noise, and exit 2 for a file the run
never needed fails a review for nothing. The questions asked are the cold run's on a warm one
too: the settle is computed only after every search before it was computed or computed again
(queries.py `catch_up`: the searches are stateful), and an edit that changes which questions
are asked changes what a search read, which the settle's entry holds too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from amp_clipfix.analysis.recording import TextTest
from amp_clipfix.analysis.word_scan import holds_any

Question = tuple[tuple[bytes, ...], TextTest | None]


class Questions:
    """The questions asked, in order, each with the files its text test refused (those it let
    through were asked for, and so read)."""

    def __init__(self) -> None:
        self.refused: dict[Question, set[Path]] = {}
        # each file's answer to `holds_any` of a question's words, tested once a run: a file's
        # text is the same for every search (its document's), and the rules and the settle
        # ask the same words again (the Lightning tree: 3,604 tests, 1,737 of them distinct)
        self.held: dict[tuple[bytes, ...], dict[Path, bool]] = {}

    def asked(self, words: tuple[bytes, ...], where: TextTest | None) -> set[Path]:
        """Note the question; its set of refused files, for the search to fill."""
        return self.refused.setdefault((words, where), set())

    def __bool__(self) -> bool:
        return bool(self.refused)

    def __iter__(self) -> Iterator[Question]:
        """The questions asked (their words and text tests), in order."""
        return iter(self.refused)

    def want(self, path: Path, text: Callable[[Path], bytes | None]) -> bool:
        """Whether a question asked would read the file (`text`: its document's text as
        UTF-8, as `with_words` tests it; None when it is no document): it holds one of the
        question's words and passes its test, tested now where the search stopped before it."""
        data = None
        for (words, where), refused in self.refused.items():
            if path in refused:
                continue
            data = text(path) if data is None else data
            if data is None:
                return False
            if self.holds(path, data, words) and (where is None or where(path, data)):
                return True
        return False

    def holds(self, path: Path, data: bytes, words: tuple[bytes, ...]) -> bool:
        """`holds_any(data, words)` of the file's text `data`, tested once per run."""
        answers = self.held.get(words)
        if answers is None:
            answers = self.held[words] = {}
        found = answers.get(path)
        if found is None:
            found = answers[path] = holds_any(data, words)
        return found
