"""What a project of many factories asks per factory, by count: the caller questions compile no
pattern per name asked (a whole word and a call's literal are found by `bytes.find`), the
resolution makes a module's text only for a site line that may hold a suppression comment, and
`expression_at` makes no span per expression it passes. Each shortcut gives the answer of what
it replaces, tested here against it."""

from __future__ import annotations

import ast
import json
import random
import re
from collections import deque
from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis import resolve_base
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.collect import LineSuppressions, comment_suppressions
from amp_clipfix.analysis.recording import matches, matches_text
from amp_clipfix.analysis.resolve_refine import expression_at
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.text_tests import call_of, whole_word, whole_word_text, written
from amp_clipfix.analysis.word_index import SCANS_BEFORE_INDEX
from amp_clipfix.sources.prefilter import literal_starts, whole_word_starts
from bench.factory_project import write_project

FACTORIES = 12
NAME = b"make_optimizer_"


def test_a_run_over_factories_compiles_no_pattern_naming_a_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every factory's callers are asked for (one finding each); once the word index answers
    (past the first SCANS_BEFORE_INDEX names, each a scan of every file with its pattern), no
    pattern written for a factory's name is compiled: 7dbd3fb compiled two per factory (its
    whole word, and the literal its caller's summary searched for)."""
    count = SCANS_BEFORE_INDEX + 20
    write_project(tmp_path, count)
    compiled: list[bytes] = []
    original = re._compile  # type: ignore[attr-defined]

    def spy(pattern: object, flags: int) -> re.Pattern[bytes]:
        if isinstance(pattern, bytes) and NAME in pattern:
            compiled.append(pattern)
        return original(pattern, flags)  # type: ignore[no-any-return]

    re.purge()  # patterns an earlier test of this process compiled, kept by re and by ours
    whole_word.cache_clear()
    call_of.cache_clear()
    monkeypatch.setattr(re, "_compile", spy)
    run = amp_clipfix(tmp_path, "check", "--no-cache", "-j", "1", "--format", "json", entry=False)
    monkeypatch.undo()  # the patterns below are the test's own
    assert run.code == 1
    findings = json.loads(run.stdout)["findings"]
    assert sorted(f["path"] for f in findings) == sorted(f"pkg/f{i}.py" for i in range(count))
    # one pattern per name asked by scanning (its whole word); none for a name the index
    # answers, nor for the literal a caller's summary looks for (patterns of every name at once,
    # the relevance's, aside)
    single = [p for p in compiled if len(set(re.findall(NAME + rb"[0-9]+", p))) == 1]
    assert len(single) == SCANS_BEFORE_INDEX
    assert all(p == whole_word_text(re.findall(NAME + rb"[0-9]+", p)[0]) for p in single)


def test_the_resolution_makes_no_module_text_for_sites_without_a_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The factories' site lines hold no `#`: no SourceText is made for their suppressions
    (7dbd3fb made one per file in each of the two resolutions); a factory whose `fused=True`
    line says `# noqa: ACF002` is still silenced, through the text made for it alone."""
    write_project(tmp_path, FACTORIES)
    silenced = tmp_path / "pkg" / "f3.py"
    text = silenced.read_text(encoding="utf-8")
    silenced.write_text(text.replace("fused=True):", "fused=True):  # noqa: ACF002"), "utf-8")
    made: list[str] = []

    class Spy(SourceText):
        def __init__(self, text: str, tree: ast.Module) -> None:
            made.append(text)
            super().__init__(text, tree)

    monkeypatch.setattr(resolve_base, "SourceText", Spy)
    run = amp_clipfix(tmp_path, "check", "--no-cache", "-j", "1", "--format", "json", entry=False)
    findings = json.loads(run.stdout)["findings"]
    assert sorted(f["path"] for f in findings) == sorted(f"pkg/f{i}.py" for i in range(FACTORIES))
    assert [f["path"] for f in findings if f["suppressed"]] == ["pkg/f3.py"]
    assert made and all("make_optimizer_3(params, fused=True):  # noqa" in text for text in made)


def test_expression_at_makes_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each expression on the asked line is tested where it starts, without its whole span
    (7dbd3fb made one per expression passed: ~12 per factory's site)."""
    text = "x = f(a, g(b, c=d), **extra)\ny = [h(i) for i in z]\n"
    summary = summarise(Path("."), Path("m.py"), text)
    spans: list[ast.AST] = []
    original = Summary.span

    def spy(self: Summary, node: ast.AST) -> object:
        spans.append(node)
        return original(self, node)

    monkeypatch.setattr(Summary, "span", spy)
    found = expression_at(summary, 1, text.index("c=d") + 2)
    spread = expression_at(summary, 1, text.index("**extra"))
    assert spans == []
    assert isinstance(found, ast.Name) and found.id == "d"
    assert isinstance(spread, ast.Name) and spread.id == "extra"


def spans_expression_at(summary: Summary, line: int, column: int) -> ast.AST | None:
    """expression_at as 7dbd3fb wrote it: each candidate's whole span made and compared."""
    queue: deque[ast.AST] = deque(summary.tree.body)
    while queue:
        node = queue.popleft()
        if getattr(node, "lineno", line) <= line <= (getattr(node, "end_lineno", None) or line):
            if isinstance(node, ast.keyword) and node.arg is None:
                span = summary.span(node)
                if (span.line, span.column) == (line, column):
                    return node.value
            elif isinstance(node, ast.expr) and node.lineno == line:
                span = summary.span(node)
                if (span.line, span.column) == (line, column):
                    return node
            queue.extend(ast.iter_child_nodes(node))
    return None


def test_expression_at_finds_what_the_spans_find() -> None:
    """Non-ASCII text before an expression (character and byte columns differ), spreads, a
    call nested in a call, a class body: at every expression's start, the node the spans find."""
    text = 'é = "ü"; q = fn(à, g(h)(k), **{"fused": ü})\nclass C:\n    z = C.d(é, **é)\n'
    summary = summarise(Path("."), Path("m.py"), text)
    starts = {
        (summary.span(node).line, summary.span(node).column)
        for node in ast.walk(summary.tree)
        if isinstance(node, (ast.expr, ast.keyword))
    }
    assert len(starts) > 15
    for line, column in sorted(starts):
        assert expression_at(summary, line, column) is spans_expression_at(summary, line, column)


WORDY = [
    b"",
    b"make_opt",
    b"make_opt(make_opt)",
    b"amake_opt make_opt2 _make_opt 9make_opt make_opt_",
    b"make_optmake_opt make_opt.make_opt",
    b"x\xc3\xa9make_opt \xc3\xa9make_opt make_opt\xc3\xa9",
    b"def make_opt(): return make_opt\nclass make_opt: pass",
]


@pytest.mark.parametrize("data", WORDY)
def test_whole_word_starts_are_the_patterns_starts(data: bytes) -> None:
    for name in (b"make_opt", b"opt", b"m", b"_"):
        starts = [m.start() for m in whole_word(name).finditer(data)]
        assert whole_word_starts(data, name) == starts


def test_whole_word_and_literal_starts_on_random_texts() -> None:
    """Texts of a small alphabet (overlapping names, word and non-word bytes, non-ASCII): the
    same starts as the patterns, for names and for literals that overlap themselves."""
    rng = random.Random(35)
    alphabet = [b"a", b"b", b"_", b"1", b" ", b".", b"(", b"\xc3\xa9", b"*"]
    for _ in range(400):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
        for name in (b"a", b"ab", b"aa", b"a_b", b"_a"):
            expected = [m.start() for m in whole_word(name).finditer(data)]
            assert whole_word_starts(data, name) == expected
        for literal in (b"a", b"aa", b"**", b"a(", b"\xc3\xa9"):
            expected = [m.start() for m in re.finditer(re.escape(literal), data)]
            assert literal_starts(data, literal) == expected


@pytest.mark.parametrize("data", [*WORDY, b"x = make_opt  # make_opt\ndef  make_opt(): ..."])
def test_written_is_the_patterns_answer(data: bytes) -> None:
    """`written` with a whole word, from the text search: what its pattern said before."""
    for name in ("make_opt", "opt"):
        pattern = whole_word(name.encode())
        expected = any(
            not re.search(rb"(?<![A-Za-z0-9_])(?:def|class)[ \t\f]+\Z", data[: m.start()])
            for m in pattern.finditer(data)
        )
        assert written(None, data, "whole_word", name) is expected


def test_a_scan_is_noted_by_its_patterns_text() -> None:
    """The note a caller scan leaves without compiling its pattern is the one it left by it."""
    for name in (b"make_opt", b"x_1", b"a.b"):
        assert matches_text(whole_word_text(name)) == matches(whole_word(name))


SUPPRESSED = """import torch  # noqa
x = torch.optim.AdamW(p, fused=True)  # amp-clipfix: ignore[ACF002]
s = "# noqa"; y = 1
z = f(  # not a suppression
    a)  # noqa: ACF001, acf003
# amp-clipfix: ignore
w = 2
"""


def test_line_suppressions_read_every_line_as_the_module_text_does() -> None:
    summary = summarise(Path("."), Path("m.py"), SUPPRESSED)
    source = SourceText(summary.source(), summary.tree)
    whole = comment_suppressions(source, summary.tree)
    made: list[int] = []

    def text() -> dict[int, frozenset[str]]:
        made.append(1)
        return comment_suppressions(source, summary.tree)

    lazy = LineSuppressions(summary.lines, text)
    numbers = range(0, SUPPRESSED.count("\n") + 3)
    assert [lazy.get(n) for n in numbers] == [whole.get(n) for n in numbers]
    assert lazy.get(2) == frozenset({"ACF002"})
    assert made == [1]  # the text made once, at the first line holding a `#`


def test_line_suppressions_make_no_text_without_a_comment() -> None:
    summary = summarise(Path("."), Path("m.py"), "a = 1\nb = f(a)\n")

    def text() -> dict[int, frozenset[str]]:
        raise AssertionError("no line holds a #")

    lazy = LineSuppressions(summary.lines, text)
    assert [lazy.get(n) for n in (1, 2, 3)] == [frozenset()] * 3


def decoded_column(summary: Summary, line: int, byte_column: int) -> int:
    """Summary.column as a5367223 wrote it: the line's bytes up to the column, decoded."""
    if 0 < line <= len(summary.lines):
        return len(summary.lines[line - 1][:byte_column].decode("utf-8", "replace"))
    return byte_column


@pytest.mark.parametrize(
    "text",
    [
        "def f(p, fused=True):\n    return torch.optim.AdamW(p, fused=fused)\n\r\nx = 1\r\n",
        'é = "ü"; q = fn(à, g(h)(k), **{"fused": ü})\nclass C:\n    z = C.d(é, **é)\n',
    ],
)
def test_a_column_is_the_decoded_lines_length(text: str) -> None:
    summary = summarise(Path("."), Path("m.py"), text)
    for line in range(-1, len(summary.lines) + 2):
        for byte_column in range(0, 60):
            answer = decoded_column(summary, line, byte_column)
            assert summary.column(line, byte_column) == answer, (line, byte_column)


def test_a_column_of_an_ascii_module_reads_no_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every byte of an ASCII text is one character: a column is the byte column, up to the
    line's end, with no line sliced and decoded (a5367223 did both for each of the ~30 columns
    a factory's resolution asks)."""
    text = "def make(p, fused=True):\n    return torch.optim.AdamW(p, fused=fused)\n"
    summary = summarise(Path("."), Path("m.py"), text)
    read: list[object] = []
    original = type(summary.lines).__getitem__
    monkeypatch.setattr(
        type(summary.lines), "__getitem__", lambda self, i: read.append(i) or original(self, i)
    )
    call = next(node for node in ast.walk(summary.tree) if isinstance(node, ast.Call))
    span = summary.span(call)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 11, 2, 44)
    assert summary.column(1, 500) == len("def make(p, fused=True):")
    assert read == []
