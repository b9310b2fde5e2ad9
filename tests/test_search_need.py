"""The search gate's two questions share their work (sources/prefilter.search_need): the
collection asks each file's raw bytes whether a rule with its own search may find something, and
keeps the files found to hold no searching word but `precision` (`Collection.cleared`); the
pipeline asks the searchable texts again with the project's root, and asks the cleared files
only whether they hold `precision`. The answers are those of asking every file every word."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amp_clipfix import pipeline
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.sources.prefilter import (
    LEGACY_PIECE,
    LEGACY_PRECISION_WORDS,
    PRECISION_WORD,
    SearchFile,
    holds,
    may_need_search,
    search_need,
)

ROOT = Path("/p")


def test_each_of_acf011s_words_holds_the_piece_asked_first() -> None:
    assert all(LEGACY_PIECE in word for word in LEGACY_PRECISION_WORDS)


def files_of(*files: tuple[str, bytes]) -> list[SearchFile]:
    return [(ROOT / name, data, name.endswith(".yaml"), holds) for name, data in files]


SETTING = b"def test(cfg):\n    cfg.trainer.precision = 16\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([("a.py", b"x = 1\n")], (False, frozenset())),  # no precision: nothing to clear
        ([("a.py", b"clip_grad_norm_(p)\n"), ("b.py", b"x = 1\n")], (True, frozenset())),
        ([("t.py", SETTING), ("c.yaml", b"precision: 32\n"), ("a.py", b"x\n")], (True, {"c", "a"})),
        ([("c.yaml", b"# precision: 16-mixed\n"), ("a.py", b"y = 16\n")], (False, {"a"})),
    ],
)
def test_search_need_answers_the_gate_and_names_the_files_without_words(
    files: list[tuple[str, bytes]], expected: tuple[bool, frozenset[str]]
) -> None:
    needed, cleared = search_need(files_of(*files))
    assert (needed, {path.stem for path in cleared}) == (expected[0], set(expected[1]))


def test_a_cleared_file_still_answers_whether_the_project_holds_precision() -> None:
    """The only `precision` is in a file with no searching word (cleared); another file's
    `"16"` is one of ACF011's words: the project may need the search."""
    files = files_of(
        ("c.yaml", b"trainer:\n  precision: 32\n"),
        ("t.py", b'from lightning import Trainer\nmode = "16"\n'),
    )
    needed, cleared = search_need(files)
    assert (needed, cleared) == (True, frozenset({ROOT / "c.yaml"}))
    assert may_need_search(files, ROOT, cleared)
    assert not may_need_search(files[:1], ROOT, cleared)


PIECES = [
    "precision",
    "precision=16",
    "precision: 16",
    "precision: 16-mixed",
    "'16'",
    '"bf16"',
    "16",
    "clip_gradients",
    "from lightning import Trainer",
    "# precision: 16",
    "\\x31",
    "x = 1",
]
NAMES = ["a.py", "b.py", "c.yaml", "d.yaml", "lightning/e.py"]


@given(
    st.lists(
        st.tuples(st.sampled_from(NAMES), st.lists(st.sampled_from(PIECES), max_size=4)),
        max_size=5,
        unique_by=lambda file: file[0],
    )
)
def test_the_cleared_files_change_no_answer(files: list[tuple[str, list[str]]]) -> None:
    searched = files_of(*((name, "\n".join(text).encode()) for name, text in files))
    needed, cleared = search_need(searched)
    assert needed is may_need_search(searched)
    assert may_need_search(searched, ROOT, cleared) is may_need_search(searched, ROOT)
    assert all(
        not any(word in data for word in (*LEGACY_PRECISION_WORDS, b"clip_gradients"))
        for path, data, _, _ in searched
        if path in cleared
    )


# The Lightning-Hydra template's shape: a test setting `precision = 16`, a trainer config with
# `precision: 16` commented out, and modules that write none of the searching words.
PROJECT = {
    "pyproject.toml": '[project]\nname = "p"\ndependencies = ["lightning>=2.1"]\n',
    "tests/test_train.py": SETTING.decode(),
    "configs/trainer.yaml": "_target_: lightning.pytorch.Trainer\n# precision: 16\n",
    "src/model.py": "import torch\n\n\ndef forward(x):\n    return x * 2\n",
    "src/data.py": "def load(path):\n    return open(path).read()\n",
}


def test_the_pipeline_asks_the_cleared_files_for_precision_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    asked: dict[bytes, set[bytes]] = {}

    def noted_holds(data: bytes, word: bytes) -> bool:
        asked.setdefault(data, set()).add(word)
        return holds(data, word)

    monkeypatch.setattr(pipeline, "holds", noted_holds)
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert (result.findings, result.errors, result.files_seen) == ((), (), 4)
    for name in ("src/model.py", "src/data.py"):
        assert asked.get((tmp_path / name).read_bytes(), set()) <= {PRECISION_WORD}
    assert LEGACY_PRECISION_WORDS[0] in asked[SETTING]  # a file not cleared is asked its words
