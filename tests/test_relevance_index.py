"""relevance.relevant_core's rounds answered from the project's word index (word_index.py):
the same core as the text searches, and no search of every text per round."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.analysis import relevance
from amp_clipfix.analysis.relevance import relevant_core
from amp_clipfix.analysis.word_index import WordIndex, words_of

FACTORY = (
    b"from torch.optim import AdamW\n\ndef build_optimizer(p):\n    return AdamW(p, fused=True)\n"
)
MIXIN = b"from factory import build_optimizer\n\nclass OptimizerMixin:\n    x = build_optimizer()\n"
MODEL = b"from mixins import OptimizerMixin\n\nclass Model(OptimizerMixin):\n    pass\n"
# writes the names only inside longer words (one after a non-ASCII letter)
LOOKALIKE = (
    b"build_optimizer_v2 = 1\nxOptimizerMixin = 2\n\xc3\xa9Model3 = 3\n"
    b"def helper_fn():\n    return build_optimizer_v2\n"
)
USER = b"from lookalike import helper_fn\n\nhelper_fn()\n"


def project() -> dict[Path, bytes]:
    files = {"factory": FACTORY, "mixins": MIXIN, "model": MODEL, "lookalike": LOOKALIKE}
    return {Path(f"{name}.py"): data for name, data in {**files, "user": USER}.items()}


def core_of(contents: dict[Path, bytes], indexed: bool) -> tuple[dict, dict]:
    index = (lambda: words_of(contents)) if indexed else None
    core = relevant_core(contents, b"fused", index)
    return core.rounds, core.defined


def test_the_index_gives_the_rounds_of_the_text_searches() -> None:
    contents = project()

    rounds, defined = core_of(contents, indexed=True)

    assert (rounds, defined) == core_of(contents, indexed=False)
    assert rounds == {Path("factory.py"): 0, Path("mixins.py"): 1, Path("model.py"): 2}
    assert Path("lookalike.py") not in rounds  # the names only inside other words


def test_a_comment_writing_a_name_joins_in_a_later_round_either_way() -> None:
    contents = {**project(), Path("lookalike.py"): LOOKALIKE + b"# Model\n"}

    rounds, defined = core_of(contents, indexed=True)

    assert (rounds, defined) == core_of(contents, indexed=False)
    assert rounds[Path("lookalike.py")] == 3 and rounds[Path("user.py")] == 4


def test_with_the_index_no_round_searches_every_text(monkeypatch: pytest.MonkeyPatch) -> None:
    contents = project()
    index = WordIndex(contents)
    asked = []

    def no_search(words: set[bytes]) -> None:
        asked.append(words)
        raise AssertionError("a round searched every text")

    monkeypatch.setattr(relevance, "any_word", no_search)

    core = relevant_core(contents, b"fused", index.files_by_words)

    assert set(core.rounds) == {Path("factory.py"), Path("mixins.py"), Path("model.py")}
    assert asked == []
    assert index.built(b"Model") == [Path("model.py")]  # the pass is the index later asks


def test_the_index_is_made_only_when_a_round_has_names() -> None:
    contents = {Path("a.py"): b"x = 1\n", Path("b.py"): b"fused = True\n"}
    made = []

    def index() -> dict[bytes, list[Path]]:
        made.append(1)
        return words_of(contents)

    core = relevant_core({Path("a.py"): b"x = 1\n"}, b"fused", index)

    assert core.rounds == {} and made == []


NAMES = st.sampled_from(["fused", "Net", "Net2", "net", "build", "build_it", "_x", "A1"])
SEPARATORS = st.sampled_from(
    [" ", "\n", ".", "(", "_", "1", "é", "# ", " = ", "\ndef ", "\nclass "]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(SEPARATORS, NAMES), max_size=12).map(
            lambda parts: "\n" + "".join(s + n for s, n in parts) + "\n"
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_same_core_on_random_texts(texts: list[str]) -> None:
    contents = {Path(f"m{i}.py"): text.encode("utf-8") for i, text in enumerate(texts)}

    assert core_of(contents, indexed=True) == core_of(contents, indexed=False)
