"""fused_keys.py: a call the evaluator cannot follow has its `**spread` evaluated for a `fused`
key only where some text of the project may write one; the text test, checked against the
parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_self_imports import project

from amp_clipfix.analysis import fused_keys
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.recording import Reads, Recording, passes
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


# A Lightning module whose optimizer a library call builds from a `**spread` (the evaluator
# cannot follow `somelib.Builder`): fused only where the spread holds a `fused` key.
SPREAD_FACTORY = """import somelib


def make_optimizer(params, **options):
    return somelib.Builder(params, **options)
"""
SPREAD_MODULE = """import lightning as L
from pkg.factory import make_optimizer

OPTIONS = {"lr": 0.1}  # fused later


class Module(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), **OPTIONS)
"""
SPREAD_EDITS = (
    ("the key written", "pkg/module.py", '{"lr": 0.1}', '{"lr": 0.1, "fused": True}'),
    ("the key renamed", "pkg/module.py", '"fused": True', '"unfused": True'),
    # no word `fused` written (a query that read a spread would be asked again: below)
    ("a key in a file no query reads", "pkg/other.py", "{}", '{"fus\\x65d": 1}'),
    ("a key spelled in pieces", "pkg/module.py", '"unfused": True', '"fu" "sed": True'),
)


def test_warm_runs_after_edits_that_write_or_drop_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edit after edit the warm run prints the cold run's bytes; the finding comes and goes
    with the key."""
    from test_incremental import base_project, edit_line, same_as_cold
    from test_incremental import write as write_file

    root = base_project(tmp_path, monkeypatch, "False")
    write_file(root, "pkg/factory.py", SPREAD_FACTORY)
    write_file(root, "pkg/module.py", SPREAD_MODULE)
    write_file(root, "pkg/other.py", "UNRELATED = {}\n")
    reports = [same_as_cold(root, "--format", "json")]
    for _, path, old, new in SPREAD_EDITS:
        edit_line(path, old, new)(root)
        reports.append(same_as_cold(root, "--format", "json"))
    assert b"ACF002" not in reports[0]
    assert b"ACF002" in reports[1]  # through the spread
    assert b"ACF002" not in reports[2]


def test_the_noted_test_fails_on_an_edit_that_writes_a_key(tmp_path: Path) -> None:
    """A query's stored `exists` (no file passed) is checked again on each changed file
    (query_checks.still: `passes` of the noted test): a key written any way makes it fail, so
    the queries that read a spread are asked again; a comment does not."""
    contents = {tmp_path / "a.py": b"x = 1  # fused\n"}
    recording = Recording(contents, Reads())
    assert not fused_keys.may_hold_fused(recording)
    test = next(iter(recording.reads.exists))
    assert recording.reads.exists[test] is None
    for edited in (b'd = {"fus\\x65d": 1}\n', b"f(fused=1)\n", b'd["fu" "sed"] = 1\n'):
        assert passes(test, edited, tmp_path / "other.py")
    assert not passes(test, b"y = 2  # fused\n", tmp_path / "other.py")
