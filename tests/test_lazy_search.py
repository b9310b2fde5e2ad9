"""The searching rules parse a file only when their own search asks for it (issue 27): a file
that holds only the word of a search that never looks at it is not parsed, and a word-holding
file that does not parse is still reported, in the order an eager read reported it. Behaviour
only: which files `summarise` parsed, the output lines and the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from spied import check_counting_parses

from amp_clipfix.output.report import is_error_line

# ACF005 searches (the project writes `manual_backward`) and so `.fit(` is one of its words,
# but its search reads a `fit` only for a module that clips: here nothing clips.
MANUAL = "def step(module, loss):\n    module.manual_backward(loss)\n"
# The same where code may clip and a module may optimize by hand (ACF005 searches only then):
# the receiver is no module anyone is known to pass, so still no `fit` is read.
CLIPPING = (
    MANUAL + "    module.clip_gradients(None, 1.0)\n    module.automatic_optimization = False\n"
)
FIT = "def train(estimator, x):\n    return estimator.fit(x)\n"


def test_a_file_holding_only_words_no_search_asks_for_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(CLIPPING, encoding="utf-8")
    (tmp_path / "other.py").write_text(FIT, encoding="utf-8")
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert code == 0, output
    assert output.startswith("0 findings "), output
    assert parsed == ["train.py"]


def test_word_holding_files_that_do_not_parse_are_reported_only_where_a_question_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`a.py` holds only `.fit(`, `b.py` the `manual_backward` ACF005 searches for: no module
    may optimize by hand, so no search asks a question either file answers, and neither is
    reported (the contract of analysis/questions.py; test_asked_questions.py reports them
    where a question is asked)."""
    (tmp_path / "a.py").write_text("estimator.fit(x\n", encoding="utf-8")
    (tmp_path / "b.py").write_text(MANUAL.replace("(loss)", "(loss"), encoding="utf-8")
    (tmp_path / "c.py").write_text(FIT, encoding="utf-8")
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert code == 0, output
    errors = [line for line in output.splitlines() if is_error_line(line)]
    assert errors == []
    assert "c.py" not in parsed


def test_code_the_compiler_refuses_but_python_parses_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cheap check builds the symbol table, which refuses a module-level `nonlocal`; such a
    file is then parsed to know, and it parses: no error. Here `top.py` holds only `.fit(`,
    whose question no search asks: it is neither checked nor parsed (test_asked_questions.py
    checks one a question asked wants)."""
    (tmp_path / "train.py").write_text(CLIPPING, encoding="utf-8")
    (tmp_path / "top.py").write_text("estimator.fit(x)\nnonlocal x\n", encoding="utf-8")
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert code == 0, output
    assert "error" not in output
    assert parsed == ["train.py"]


def test_a_file_the_collection_parsed_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`opt.py` passes the prefilter (a fused optimizer) and so was parsed whole by the
    collection: it is not compiled to check that it parses. Nor is `other.py`, which no stage
    parsed: it holds only `.fit(`, whose question no search asks here (analysis/questions.py)."""
    from amp_clipfix.analysis import project_resolve

    checked: list[str] = []
    may_parse = project_resolve.may_parse

    def spied(text: str) -> bool:
        checked.append(text)
        return may_parse(text)

    monkeypatch.setattr(project_resolve, "may_parse", spied)
    opt = "import torch\n\nopt = torch.optim.AdamW([], fused=True)\nestimator.fit(x)\n"
    (tmp_path / "train.py").write_text(CLIPPING, encoding="utf-8")
    (tmp_path / "opt.py").write_text(opt, encoding="utf-8")
    (tmp_path / "other.py").write_text(FIT, encoding="utf-8")
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert "error" not in output
    assert checked == []
    assert "opt.py" not in parsed and "other.py" not in parsed


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (b"fit", (0, 3)),
        (b"trainer.fit(model)", (8, 11)),
        (b"refit(x); fit_all(); x.fit", (23, 26)),
        (b"_fit fit2 \xc3\xa9fit", (12, 15)),  # the test is ASCII: a UTF-8 byte is no letter
        (b"_fit fit2 afit", None),
        (b"re fit", (3, 6)),
    ],
)
def test_whole_word_finds_the_name_only_outside_longer_identifiers(
    text: bytes, found: tuple[int, int] | None
) -> None:
    """The callers' word test (the name first, the look behind after it, for speed) matches
    where a leading look-behind would."""
    from amp_clipfix.analysis.callers import whole_word

    match = whole_word(b"fit").search(text)
    assert (match.span() if match else None) == found


def nested(terms: int) -> str:
    """A module whose one expression nests `terms` deep (`a+a+...`): `ast.parse` gives up at
    a depth that depends on the frames already running."""
    return "x = " + "+".join(["a"] * terms) + "\n"


def parses(terms: int) -> bool:
    import ast

    try:
        ast.parse(nested(terms))
    except (RecursionError, MemoryError, SyntaxError):
        return False
    return True


def deepest(parse: Callable[[int], bool]) -> int:
    low, high = 1, 20_000
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if parse(middle) else (low, middle - 1)
    return low


def test_a_file_read_late_parses_as_it_would_have_when_read_first() -> None:
    """`project_facts` read every word file from a comprehension; a search now reads one many
    frames deeper, through `parse_at_depth`: the deepest nesting that parses is the same."""
    from amp_clipfix.analysis.project_resolve import frame_depth, parse_at_depth

    starts: list[int] = []

    def eager(terms: int) -> bool:  # as project_facts: where it notes its depth, then reads
        starts.append(frame_depth() + 2)
        return [read_first(terms) for _ in (0,)][0]

    def read_first(terms: int) -> bool:
        return parses(terms)

    def late(terms: int, start: int, frames: int) -> bool:
        if frames:
            return late(terms, start, frames - 1)
        return read_late(terms, start)

    def read_late(terms: int, start: int) -> bool:
        return bool(parse_at_depth(lambda: parses(terms), start))  # type: ignore[arg-type]

    limit = deepest(eager)
    start = starts[0]
    for frames in (0, 40, 200):
        assert deepest(lambda terms: late(terms, start, frames)) == limit  # noqa: B023
