"""A run tests each word file's text for a question's words once (analysis/questions.py
`Questions.holds`): the rules ask the same words again (`manual_backward` from several
searches), and the settle asks whether a question would read each file it did not parse. The
answers are those of testing the text anew each time."""

from __future__ import annotations

import random
from pathlib import Path

from amp_clipfix.analysis.facts import FileFacts, LazyFiles
from amp_clipfix.analysis.word_scan import holds_any


class Counted(bytes):
    """A text that counts the substring tests made of it."""

    tests = 0

    def __contains__(self, part: object) -> bool:
        Counted.tests += 1
        return bytes.__contains__(self, part)  # type: ignore[operator]

    def find(self, part: bytes, *where: int) -> int:  # type: ignore[override]
        Counted.tests += 1
        return bytes.find(self, part, *where)


def lazy_files(texts: dict[Path, bytes]) -> LazyFiles:
    def parse(path: Path) -> FileFacts | None:
        return object()  # type: ignore[return-value]

    return LazyFiles(list(texts), texts.get, parse)


def test_the_same_words_asked_again_test_no_text_again(tmp_path: Path) -> None:
    """Two searches for one word and the settle's question: each text is tested once. On
    ea595ee each of the three asks tested every text again."""
    texts = {
        tmp_path / "a.py": Counted(b"manual_backward = 1\n"),
        tmp_path / "b.py": Counted(b"other = 2\n"),
        tmp_path / "c.py": Counted(b"x.manual_backward(loss)\n"),
    }
    lazy = lazy_files(texts)  # type: ignore[arg-type]
    Counted.tests = 0
    first = [file for file in lazy.with_words((b"manual_backward",), None)]
    once = Counted.tests
    assert once == 3 and len(first) == 2
    again = [file for file in lazy.with_words((b"manual_backward",), None)]
    assert again == first
    assert not lazy.questions.want(tmp_path / "b.py", texts.get)  # type: ignore[arg-type]
    assert Counted.tests == once


def test_the_settle_takes_a_search_s_answer_for_a_file_it_refused(tmp_path: Path) -> None:
    """A file the question's text test refused is not wanted, and its words are not looked
    for again; one the search stopped before is tested then, once."""
    texts = {
        tmp_path / "a.py": Counted(b"word = 1\n"),
        tmp_path / "b.py": Counted(b"word = 2  # refused\n"),
        tmp_path / "c.py": Counted(b"word = 3\n"),
    }
    lazy = lazy_files(texts)  # type: ignore[arg-type]
    Counted.tests = 0
    searched = lazy.with_words((b"word",), lambda path, data: b"refused" not in data)
    assert next(searched) is not None  # a.py, and the search stops there
    tests = Counted.tests
    assert lazy.questions.want(tmp_path / "c.py", texts.get)  # type: ignore[arg-type]
    assert Counted.tests > tests  # c.py tested now: the search stopped before it
    tests = Counted.tests
    assert lazy.questions.want(tmp_path / "c.py", texts.get)  # type: ignore[arg-type]
    assert Counted.tests == tests + 1  # the text test's `in`, not the words again


def test_the_answers_are_those_of_testing_each_time() -> None:
    """Random texts, words and text tests, asked in random order and again: every search
    yields the files whose text holds a word and passes the test, and the settle wants
    exactly the files a question would read."""
    chooser = random.Random(35)
    alphabet = [b"ab", b"ba", b"a", b"b", b"_", b" ", b"\n", b"cd"]
    for _ in range(40):
        texts = {
            Path(f"/p/{n}.py"): b"".join(chooser.choices(alphabet, k=chooser.randint(0, 12)))
            for n in range(8)
        }
        lazy = lazy_files(texts)
        questions = []
        for _ in range(6):
            words = tuple(chooser.sample([b"ab", b"ba", b"abb", b"cd", b"b_", b"zz"], 2))
            mark = chooser.choice([None, b"a", b"d"])

            def where(path: Path, data: bytes, mark: bytes | None = mark) -> bool:
                return mark is None or mark not in data

            questions.append((words, where))
            found = [file for file in lazy.with_words(words, where)]
            expected = [p for p in sorted(texts, key=str) if holds_any(texts[p], words)]
            expected = [p for p in expected if where(p, texts[p])]
            assert len(found) == len(expected)
        for path, data in texts.items():
            wanted = any(holds_any(data, w) and where(path, data) for w, where in questions)
            assert lazy.questions.want(path, texts.get) == wanted
