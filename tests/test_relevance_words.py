"""The files a fused value can reach (analysis/relevance.py `relevant_core`): a round of many
names is looked for in each file's set of words, split once for every round, and finds exactly
the files a `\\b(?:name|...)\\b` pattern finds (the search every round made before)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis.relevance import Core, relevant_core, top_level_names

NAMES = [f"factory_{index}" for index in range(70)]
# What may stand beside a name: word bytes (then it is another word), other ASCII, UTF-8 letters.
AROUND = st.sampled_from(["", " ", ".", "(", "x", "_", "9", "é", "名", "\t", "-"])


def pattern_core(contents: dict[Path, bytes], word: bytes) -> Core:
    """relevant_core as it was: one whole-word pattern of the round's names over every file."""
    core = Core()
    frontier = {path for path, data in contents.items() if word in data}
    level = 0
    while frontier:
        for path in frontier:
            core.rounds[path] = level
            core.defined[path] = frozenset(top_level_names(contents[path]))
        names = set().union(*(core.defined[path] for path in frontier)) - core.names
        core.names |= names
        pattern = re.compile(rb"\b(?:" + b"|".join(map(re.escape, names)) + rb")\b")
        frontier = {
            path
            for path, data in contents.items()
            if path not in core.rounds and names and pattern.search(data)
        }
        level += 1
    return core


DEFINING = "opt = make(fused=True)\n" + "".join(f"def {name}():\n    pass\n" for name in NAMES)


@st.composite
def files(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 5)) == 0:  # all the names in one round: more than FEW_WORDS
        return DEFINING.encode("utf-8")
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        name = draw(st.sampled_from(NAMES))
        kind = draw(st.sampled_from(["def", "use", "fused"]))
        if kind == "def":
            lines.append(f"def {name}():\n    return 1\n")
        elif kind == "use":
            lines.append(f"y = {draw(AROUND)}{name}{draw(AROUND)}\n")
        else:
            lines.append("opt = make(fused=True)\n")
    return "".join(lines).encode("utf-8")


@settings(max_examples=60, deadline=None)
@given(st.lists(files(), min_size=1, max_size=8))
def test_many_names_find_the_files_a_pattern_finds(texts: list[bytes]) -> None:
    contents = {Path(f"m{index}.py"): text for index, text in enumerate(texts)}
    found, expected = relevant_core(contents, b"fused"), pattern_core(contents, b"fused")
    assert (found.rounds, found.defined, found.names) == (
        expected.rounds,
        expected.defined,
        expected.names,
    )


def test_a_round_of_many_names_is_read_from_the_words_of_each_file() -> None:
    """One file with `fused` defines all 70 names (a round past WordSearch.FEW_WORDS); a file
    writing one of them as a word joins, one writing it inside a longer word does not."""
    contents = {
        Path("core.py"): DEFINING.encode(),
        Path("user.py"): b"x = \xc3\xa9.factory_42(1)\n",
        Path("other.py"): b"x = factory_42b + my_factory_42\n",
        Path("later.py"): b"from user import x\nx\n",
    }
    core = relevant_core(contents, b"fused")
    assert core.rounds == {Path("core.py"): 0, Path("user.py"): 1}
    assert core.rounds == pattern_core(contents, b"fused").rounds
