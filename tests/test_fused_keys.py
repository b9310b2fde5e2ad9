"""fused_keys.py: a call the evaluator cannot follow has its `**spread` evaluated for a `fused`
key only where some text of the project may write one; the text test, checked against the
parse."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from amp_clipfix.analysis import fused_keys
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.recording import Reads, Recording
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.values import Opt

# A factory handing its keywords to a library call the evaluator cannot follow: only a `fused`
# among them makes it an optimizer (library.py `unknown_callee`).
FACTORY = {
    "builder.py": """
        import somelib

        def build(**options):
            return somelib.Make(**options)
        """,
    "train.py": """
        from builder import build

        made = build(lr=0.1)  # nothing fused here
        """,
}

# Each writes a `fused` key the spread can hold.
WRITERS = {
    "keyword": "from builder import build\n\nother = build(fused=True)\n",
    "display": 'from builder import build\n\nother = build(**{"fused": True})\n',
    "joined": 'from builder import build\n\nother = build(**{"fu" "sed": True})\n',
    "escaped": 'from builder import build\n\nother = build(**{"fus\\x65d": True})\n',
    "continued": 'from builder import build\n\nother = build(**{"fu\\\nsed": True})\n',
}


def project(tmp_path: Path, files: dict[str, str]) -> Evaluator:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    contents = {tmp_path / name: (tmp_path / name).read_bytes() for name in files}
    return project_evaluator(tmp_path, contents, lambda p: summarise(tmp_path, p, p.read_text()))


def made(evaluator: Evaluator, path: Path) -> list[object]:
    """The values of `made` in train.py, and the spread read on the way."""
    summary = evaluator.summary(path)
    assert summary is not None
    node = next(n for n in ast.walk(summary.tree) if isinstance(n, ast.Name) and n.id == "made")
    return evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))


def spread_reads(evaluator: Evaluator, monkeypatch: pytest.MonkeyPatch) -> list[ast.AST]:
    """The `options` reads the evaluator makes (the spread's evaluation), as they happen."""
    seen: list[ast.AST] = []
    ev = evaluator.ev

    def recording_ev(node: ast.AST, ctx: object) -> list[object]:
        if isinstance(node, ast.Name) and node.id == "options":
            seen.append(node)
        return ev(node, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluator, "ev", recording_ev)
    return seen


def test_no_fused_key_written_the_spread_is_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluator = project(tmp_path, FACTORY)
    seen = spread_reads(evaluator, monkeypatch)
    values = made(evaluator, tmp_path / "train.py")
    assert seen == []  # without the gate: the spread, then the callers of `build`
    assert values and not any(isinstance(v, Opt) for v in values)
    recording = Recording(dict(evaluator.contents), Reads())
    assert not fused_keys.may_hold_fused(recording)
    assert recording.reads.exists[fused_keys.TEST] is None  # noted: no file may write one


def test_the_same_values_as_the_spread_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated_values = made(project(tmp_path / "a", FACTORY), tmp_path / "a/train.py")
    gated = [described(v) for v in gated_values]
    evaluator = project(tmp_path / "b", FACTORY)
    monkeypatch.setattr(evaluator, "spreads_may_hold_fused", lambda: True)
    seen = spread_reads(evaluator, monkeypatch)
    whole = [described(v) for v in made(evaluator, tmp_path / "b/train.py")]
    assert seen  # the spread was read
    assert gated == whole


def described(value: object) -> tuple[str, object, object]:
    node = getattr(value, "node", None)
    return type(value).__name__, type(node).__name__, getattr(node, "lineno", None)


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_fused_key_written_anywhere_keeps_the_spread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    evaluator = project(tmp_path, {**FACTORY, "other.py": WRITERS[writer]})
    seen = spread_reads(evaluator, monkeypatch)
    made(evaluator, tmp_path / "train.py")
    assert seen
    recording = Recording(dict(evaluator.contents), Reads())
    assert fused_keys.may_hold_fused(recording)
    assert recording.reads.exists[fused_keys.TEST] == str(tmp_path / "other.py")


# (text, whether it may write a `fused` key)
TEXTS = [
    ("x = 1\n", False),
    ("# a fused kernel\nx = 1\n", False),
    ('def f():\n    """The fused loss."""\n', False),
    ('x = "fused loss"\n', False),
    ('x = {"f": 1, "u": "fu"}\n', False),
    ('x = f"{{ \\"f\\": 1 }}"\n', False),
    ("x = f'{{\"f\": {y}}}'\n", False),
    ("s = 'a' 'fu' 'sed'\n", False),
    ("confused = fused_op = 1\n", False),
    ("x = fused + 1\nf(fused)\nif fused == 1: pass\n", False),
    ("fused = 1\nx = 2; fused = 3\n", False),
    ("def f():\n    # a comment\n    fused = g()\n    return fused\n", False),
    ("f(a,  # a comment\n  fused=1)\n", True),
    ("f(\n    fused=1)\n", True),
    ("a, fused = 1, 2\n", True),
    ("x.fused = 1\n", True),
    ('x = "--fused"\n', True),
    ("f(fused  # a comment\n  = 1)\n", True),
    ("class C:\n    fused: bool\n", True),
    ("s = 'fus' '\\x65d'\n", True),
    ('x = {"fused": 1}\n', True),
    ("x = dict(fused=True)\n", True),
    ("(fused := 1)\n", True),
    ("d['fu' 'sed'] = 1\n", True),
    ("d['fu'  # a comment\n  'sed'] = 1\n", True),
    ('d["fus\\x65d"] = 1\n', True),
    ('d["\\146used"] = 1\n', True),
    ('d["\\u0066used"] = 1\n', True),
    ('d["\\N{LATIN SMALL LETTER F}used"] = 1\n', True),
    ('d["fu\\\nsed"] = 1\n', True),
    ('d[r"fu" "sed"] = 1\n', True),
    ("x = f\"{ {'fused': 1} }\"\n", True),
    ("x = f\"{ {'fu' 'sed': 1} }\"\n", True),
    ("\uff46used = 1\n", True),  # NFKC folds the name to `fused`
]


@pytest.mark.parametrize(("text", "may"), TEXTS)
def test_the_text_test(text: str, may: bool) -> None:
    data = text.encode("utf-8")
    assert fused_keys.may_write_fused_key(Path("m.py"), data) is may
    if not may:  # the parse agrees: no constant `fused`, no keyword or field of it
        for node in ast.walk(ast.parse(data)):
            value = node.value if isinstance(node, ast.Constant) else None
            assert not (isinstance(value, str) and value.lstrip("-") == "fused")
            assert not (isinstance(node, (ast.keyword, ast.arg)) and node.arg == "fused")
            target = node.target if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) else None
            assert getattr(target, "id", None) != "fused"


def test_a_notebook_with_the_word_may() -> None:
    data = b'{"cells": [{"source": ["# fused kernels"]}]}'
    assert fused_keys.may_write_fused_key(Path("n.ipynb"), data)
    assert not fused_keys.may_write_fused_key(Path("n.ipynb"), b'{"cells": []}')
