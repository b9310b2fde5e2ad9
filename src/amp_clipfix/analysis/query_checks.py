"""Whether a stored query's answer still holds (queries.py): everything it read is as it was.

Checked against the revision (every file's digest) it was computed at: the files it read have
the same digest; each scan, `exists` witness, text test and whole-project analysis gives on the
changed files the answer it gave; what the searches asked of the candidate files holds for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from amp_clipfix.analysis.recording import GUARDED, Condition, Test, predicate
from amp_clipfix.analysis.recording import passes as passes_now
from amp_clipfix.records import record

AGAIN = "asked again"  # `asked_again`'s answers, kept beside `still`'s tests in one memo


@record(frozen=True)
class Answer:
    """A stored query: its answer and what it read (stored as an `Entry`)."""

    revision: str  # the entry of every project file's digest when it was computed (shared)
    files: tuple[str, ...]
    scans: dict[Test, frozenset[str]]
    exists: dict[Test, str | None]
    derived: dict[tuple[object, ...], object]
    words: set[tuple[tuple[bytes, ...], Test, Condition | None]]
    members: set[tuple[str, Test]]
    listed: dict[Test, frozenset[str]]
    tests: dict[str, dict[Test, bool]]  # by file: its text's tests and their results
    value: object
    touched: bool  # its computation moved the evaluator (a cold run's next query sees that)
    left: object  # what its computation left besides its memos (certificate.Left, or None)
    parts: object  # its search's answers per candidate file (candidate_answers.Kept, or None)
    chained: object = None  # what it left, chained into the later keys for its reads (`detach`)


def still(
    stored: Answer,
    texts: Mapping[Path, bytes | None],
    contents: Mapping[Path, bytes],
    searchable: Mapping[Path, bytes],
    known: dict[tuple[object, ...], tuple[object, bool]],
    tested: dict[tuple[Test, Path], bool] | None = None,
) -> bool:
    """Whether everything `stored` read is as it was, given that the files it read did not
    change: `texts`, the files changed since its revision (None: unreadable now), the same
    bytes for every check of a run. `tested`: the run's results of a test on a changed file,
    by test and file (each query's entry holds the tests of the ones before it), and of a
    search's noted test of its document's text (`asked_again`)."""
    memo: dict[tuple[Test, Path], bool] = {} if tested is None else tested

    def passes(test: Test, data: bytes, path: Path) -> bool:
        found = memo.get((test, path))
        if found is None:
            found = memo[test, path] = passes_now(test, data, path)
        return found

    changed = {str(path) for path in texts}
    for test, found in stored.scans.items():
        for path, data in texts.items():
            passing = data is not None and passes(test, data, path)
            if passing != (str(path) in found):
                return False
    for test, witness in stored.exists.items():
        if witness is None:
            if any(data is not None and passes(test, data, p) for p, data in texts.items()):
                return False
        elif witness in changed:
            data = texts[Path(witness)]
            if data is None or not passes(test, data, Path(witness)):
                return False  # another file may pass: asked again
    if stored.tests and changed:
        for path, data in texts.items():
            for test, result in stored.tests.get(str(path), {}).items():
                if data is None or passes(test, data, path) != result:
                    return False
    if not candidates_hold(stored, texts, contents, passes, memo):
        return False
    if stored.derived and changed:
        from amp_clipfix.analysis.derived import still_holds  # fills DERIVED

        edited = {path: data for path, data in texts.items() if data is not None}
        for key, answer in stored.derived.items():
            if not still_holds(known, searchable, edited, key, answer):
                return False
    return True


def candidates_hold(
    stored: Answer,
    texts: Mapping[Path, bytes | None],
    contents: Mapping[Path, bytes],
    passes: Callable[[Test, bytes, Path], bool] = passes_now,
    asked: dict[tuple[Test, Path], bool] | None = None,
) -> bool:
    """What the searches asked of the candidate files (`recording.Candidates`) holds for
    every changed file: one that is a candidate now (its bytes pass the test, no library
    file nor config) counts where the list was read, where it was asked for, and where it
    holds words asked for and passes the text test they were asked with (one read already is
    a changed read: `still` said no). A file the test refused was not read, and one it still
    refuses gives that search nothing. `asked`: the noted tests' answers so far (`still`)."""
    if not (stored.words or stored.members or stored.listed):
        return True
    tests = {test for _, test, _ in stored.words} | {t for _, t in stored.members}
    for path, data in texts.items():
        name = str(path)
        document: list[bytes | None] = []  # its document's text, loaded once when asked
        for test in {*tests, *stored.listed}:
            now = data is not None and passes(test, data, path)
            if test in stored.listed and now != (name in stored.listed[test]):
                return False
            if not now:
                continue
            if (name, test) in stored.members:
                return False
            for words, of, where in stored.words:
                if of != test:
                    continue
                if not document:
                    document.append(document_text(path, contents))
                text = document[0]
                holds = text is not None and any(word in text for word in words)
                if holds and (where is None or asked_again(where, path, text, asked)):  # type: ignore[arg-type]
                    return False
    return True


def asked_again(
    where: Condition,
    path: Path,
    text: bytes,
    asked: dict[tuple[Test, Path], bool] | None = None,
) -> bool:
    """The noted text test (`("fn", name, *arguments)`) of the document's text now; yes when
    it cannot say (the search is computed again). `asked`: the answers so far by test and file
    (a file's document text is the same for every check of a run): each test is asked once,
    and a guarded one's inner test apart (`recording.GUARDED`), so the settle's test of a file
    takes ACF013's answer, which parsed it (one parse of an edited word file, not three)."""
    found = answered(where, path, text, asked)
    return True if found is None else found


def answered(
    where: Condition, path: Path, text: bytes, asked: dict[tuple[Test, Path], bool] | None
) -> bool | None:
    """`asked_again`'s answer; None where the test (or its inner one) cannot say."""
    key = ((AGAIN, where),), path  # no test `still` passes has such a condition
    found = None if asked is None else asked.get(key)
    if found is not None:
        return found
    inner = where[2] if where[1] in GUARDED and len(where) == 3 else None
    if isinstance(inner, tuple):  # `p(path, text, inner)` is `inner` and `p(path, text, None)`
        found = answered(inner, path, text, asked)
        if found:
            found = answer_now((*where[:2], None), path, text)
    else:
        found = answer_now(where, path, text)
    if asked is not None and found is not None:
        asked[key] = found
    return found


def answer_now(where: Condition, path: Path, text: bytes) -> bool | None:
    """The noted test's answer, computed; None when it cannot say."""
    try:
        return bool(predicate(str(where[1]))(path, text, *where[2:]))
    except Exception:  # noqa: BLE001 - no answer: counted
        return None


def document_text(path: Path, contents: Mapping[Path, bytes]) -> bytes | None:
    """The file's document text as `LazyFiles.with_words` tests it (project_resolve's
    `text_of`: UTF-8, an unpaired surrogate replaced; None: no document)."""
    from amp_clipfix.sources import adapter_for
    from amp_clipfix.sources.base import SourceError

    try:
        return adapter_for(path).load(path, contents[path]).text.encode("utf-8", "replace")
    except (SourceError, KeyError):
        return None
