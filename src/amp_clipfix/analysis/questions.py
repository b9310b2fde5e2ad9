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

from amp_clipfix.analysis.recording import PREDICATES, Condition, TextTest, predicate
from amp_clipfix.analysis.word_scan import holds_any

Question = tuple[tuple[bytes, ...], TextTest | None]
MAY_FAIL = "may_fail_to_parse"  # Unparsed's predicate (recording.PREDICATES)


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


class Unparsed:
    """A question as the settle notes it: a file that holds its words and passes its test
    changes the settle's answer only when it may not parse (project_resolve's settle reports
    such files; one that parses it passes over). Whether each file a search read parses, the
    settle's key holds already: their bytes (the searches whose reads it counts) or what a
    detached search left (queries.py `detach`: the candidates it read, and whether each
    parses). So an edit to a word file that still parses surely keeps the settle's answer."""

    def __init__(self, where: TextTest | None) -> None:
        self.where = where

    @property
    def condition(self) -> Condition | None:
        """Noted as `("fn", MAY_FAIL, the test's condition)`; None (every holder of the words
        counts) for a test without a noted form."""
        inner = None if self.where is None else getattr(self.where, "condition", None)
        if self.where is not None and (inner is None or inner[0] != "fn"):
            return None
        return ("fn", MAY_FAIL, inner)


def may_fail_to_parse(path: Path, data: bytes, inner: Condition | None) -> bool:
    """The text passes the question's noted test `inner` and may not parse: the symbol table
    (parse_depth.may_parse) refuses it within a text test's frames (parse_depth.TEST_FRAMES:
    fewer than a search's parse has, so a text it surely parses parses there too)."""
    from amp_clipfix.analysis.parse_depth import TEST_FRAMES, may_parse, with_frames

    if inner is not None and not predicate(str(inner[1]))(path, data, *inner[2:]):
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return not with_frames(TEST_FRAMES + 100, lambda: may_parse(text))  # it keeps 100 back


PREDICATES[MAY_FAIL] = may_fail_to_parse
