"""relevance.WordFiles: the word index's answers, each word's files found when first asked
(the pass's inversion, a third of its cost, made only once the lookups would cost as much):
always `index_of`'s answers, in the texts' order, before and after the index is made whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.relevance import WordFiles, index_of
from amp_clipfix.analysis.word_index import WordIndex, words_of

WORDS = [b"fit", b"Model", b"fused", b"_x", b"x1", b"\xc3\xa9t\xc3\xa9", b"\xef\xbd\x86it", b"cfg"]
SEPARATORS = [b" ", b".", b"(", b"\n", b"'", b"#", b"\xc3\xa9", b""]
texts_of = st.lists(
    st.lists(st.sampled_from(WORDS + SEPARATORS), max_size=12).map(b"".join),
    min_size=1,
    max_size=8,
)


def contents(texts: list[bytes]) -> dict[Path, bytes]:
    return {Path(f"m{number}.py"): data for number, data in enumerate(texts)}


@settings(max_examples=150, deadline=None)
@given(texts_of, st.lists(st.sampled_from([*WORDS, b"absent", b"f", b"it"]), max_size=30))
def test_every_lookup_is_index_of_s_answer(texts: list[bytes], asked: list[bytes]) -> None:
    project = contents(texts)
    expected = index_of(project.items())
    files = WordFiles(project.items())
    for word in asked + list(expected):  # the index made whole on the way, or not
        assert files.get(word) == expected.get(word)
        assert files.get(word, ()) == expected.get(word, ())
        assert (word in files) == (word in expected)
    assert dict(files) == expected
    assert list(files) == list(expected) and len(files) == len(expected)


def test_a_few_lookups_leave_the_index_unmade() -> None:
    project = contents([b"def fit(model): pass\n", b"x = fit(m)\n", b"model = 1\n"] * 40)
    files = words_of(project)
    assert isinstance(files, WordFiles)
    for _ in range(3):
        assert files.get(b"fit") == [path for path, data in project.items() if b"fit" in data]
        assert files.get(b"absent") is None
    assert files.whole is None  # two sets of 120 tested: the inversion not paid
    assert files.tested == 2 * len(project)  # each word's sets tested once
    with pytest.raises(KeyError):
        files[b"absent"]


def test_lookups_that_cost_as_much_as_the_index_make_it_whole() -> None:
    project = contents([f"w{number} = shared\n".encode() for number in range(50)])
    files = WordFiles(project.items())
    assert files.size == 100
    asked = [f"w{number}".encode() for number in range(50)]
    for word in asked:
        files.get(word)
    assert files.whole is not None and files.texts is None
    assert files.tested <= (WordFiles.INVERTED_AFTER + 1) * files.size
    assert {word: files[word] for word in asked} == {
        word: [path] for word, path in zip(asked, project)
    }
    assert files.get(b"shared") == list(project)


def test_a_large_index_is_made_whole_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WordFiles, "LAZY_MOST", 3)
    project = contents([b"a b c d\n", b"a\n"])
    files = WordFiles(project.items())
    assert files.texts is None and files.whole == index_of(project.items())


def test_the_evaluator_s_index_answers_as_a_scan_does() -> None:
    project = contents([b"import fit\n", b"fitness = 1\n", b"x.fit(y)\n", b"'fit'\n"])
    index = WordIndex(project)
    index.owed = True  # made when first asked
    assert index.naming(b"fit") == [Path("m0.py"), Path("m2.py"), Path("m3.py")]
    assert index.naming(b"fitness") == [Path("m1.py")]
    assert isinstance(index.files_by_word, WordFiles)
    assert index.files_by_word.whole is None
