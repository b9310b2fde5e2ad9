"""How a fix is checked before `check` reports it or `apply` writes it (fixes/changes.py,
sources/python.py): a rule's own text edits by Python's parser (no libcst), a codemod's output
by libcst's parser and Python's; the fixed text parsed by `ast` once, its tree read again by
the layout (fixes/layout.py), which walks only the statements holding a written line."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_small_costs import FABRIC
from test_small_costs import PROGRAM as CODEMOD_PROGRAM

from amp_clipfix.fixes import layout
from amp_clipfix.project.style import Style
from amp_clipfix.sources import python
from amp_clipfix.sources.base import VerifyError

REPO = Path(__file__).resolve().parents[1]

MIGRATION = "import torch\n\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"
MIGRATED = 'scaler = torch.amp.GradScaler("cuda", enabled=True)\n'

# `check --format json .` in the current folder, then (on stderr) the exit code and whether
# libcst was imported (test_small_costs.py's program asks about libcst.codemod).
PROGRAM = CODEMOD_PROGRAM.replace("'libcst.codemod' in sys.modules", "'libcst' in sys.modules")
assert PROGRAM != CODEMOD_PROGRAM


def checked(root: Path, code: str) -> tuple[list[str], dict]:
    """`check --format json` of a project of one module, `train.py`: ([exit code, whether
    libcst was imported], the report)."""
    for name, text in (("pyproject.toml", '[project]\nname = "p"\n'), ("train.py", code)):
        (root / name).write_text(text)
    command = [sys.executable, "-c", PROGRAM]
    run = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    return run.stderr.split()[-2:], json.loads(run.stdout)


def test_a_rules_own_edit_is_reported_without_libcst(tmp_path: Path) -> None:
    """ACF012's migration is a text edit: the JSON report gives its edit, checked by Python's
    parser, and libcst (~0.13 s to import, more to parse a module) is never imported."""
    end, report = checked(tmp_path, MIGRATION)
    assert end == ["1", "False"]
    (finding,) = report["findings"]
    assert finding["code"] == "ACF012"
    assert [e["replacement"] for e in finding["fix"]["edits"]] == [MIGRATED]
    assert report["errors"] == []


def test_a_codemods_fix_is_still_checked_with_libcst(tmp_path: Path) -> None:
    """The unscale fix is printed from libcst's tree: its output is parsed with libcst too."""
    end, report = checked(tmp_path, FABRIC)
    assert end == ["1", "True"]
    edits = "".join(e["replacement"] for e in report["findings"][0]["fix"]["edits"])
    assert "clip_gradients_unscaled(fabric, model, opt, max_norm=1.0)" in edits


def test_a_text_edit_in_a_module_libcst_overflows_on_is_made(tmp_path: Path) -> None:
    """10,000 `and` operands: Python's tree is flat, libcst's native parser overflows its stack
    (the process died with SIGSEGV in `check --format json` and `apply`, exit 139). The
    migration is a text edit Python checks: reported, then written, and the module parses."""
    chain = " and ".join(["a"] * 10_000)
    code = MIGRATION + f"a = True\nx = {chain}\n"
    end, report = checked(tmp_path, code)
    assert end == ["1", "False"]
    assert [e["replacement"] for e in report["findings"][0]["fix"]["edits"]] == [MIGRATED]
    command = [sys.executable, "-m", "amp_clipfix", "apply", "--yes", "--no-cache", "."]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    written = (tmp_path / "train.py").read_text()
    assert written == code.replace("scaler = torch.cuda.amp.GradScaler(enabled=True)\n", MIGRATED)
    ast.parse(written)


def test_verify_syntax_parses_the_old_code_only_when_the_new_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    real = ast.parse

    def counted(text: str, *rest: object, **keywords: object) -> ast.Module:
        parsed.append(text)
        return real(text, *rest, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", counted)
    tree = python.verify_syntax("x = (1\n", "x = 1\n")  # the new parses: the old decides nothing
    assert isinstance(tree, ast.Module) and parsed == ["x = 1\n"]
    assert python.verify_syntax("x = (\n", "x = (1\n") is None  # neither parses: not ours
    with pytest.raises(VerifyError, match=r"^fixed code does not parse: '\(' was never closed"):
        python.verify_syntax("x = 1\n", "x = (1\n")


def test_verify_python_refuses_what_libcst_cannot_parse() -> None:
    """A codemod's output is parsed by libcst first: what it refuses is never written."""
    with pytest.raises(VerifyError, match="^fixed code does not parse"):
        python.verify_python("x = 1\n", "x = (1\n")
    assert isinstance(python.verify_python("x = 1\n", "x = 2\n"), ast.Module)


def test_a_text_edits_fix_parses_the_fixed_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed module is parsed by `ast` once: the verification's tree is the layout's (it
    was parsed three times: the old and the new code by the verification, the new again by
    the layout)."""
    from amp_clipfix.analysis.read import read_document
    from amp_clipfix.fixes.changes import fixed_file
    from amp_clipfix.models import Edit, Span
    from amp_clipfix.sources import adapter_for

    path = tmp_path / "train.py"
    path.write_text(MIGRATION)
    document = adapter_for(path).load(path, path.read_bytes())
    file = read_document(document)
    edit = Edit(path, Span(3, 9, 3, 48), 'torch.amp.GradScaler("cuda", enabled=True)')
    parsed: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(text) or real(text))
    rendered = fixed_file(file, {}, edits=[edit])
    assert rendered.data.decode() == MIGRATION.replace(
        "scaler = torch.cuda.amp.GradScaler(enabled=True)\n", MIGRATED
    )
    assert parsed == [rendered.data.decode()]


def python_files() -> list[Path]:
    """The fixtures' Python files, before and after their fixes."""
    return sorted((REPO / "fixtures").rglob("*.py"))


def written_lines(text: str, seed: int) -> list[int]:
    """Some lines of `text`, chosen by `seed`, that count as written by a fix."""
    count = len(text.split("\n"))
    return sorted({(seed * 7919 + index * 104729) % count + 1 for index in range(seed % 5 + 1)})


def test_the_layouts_walk_yields_what_ast_walk_yields() -> None:
    """`statements_on` gives the statements starting on a written line in `ast.walk`'s order
    (the layout's result depends on that order where two statements share a first line)."""
    files = python_files()
    assert len(files) > 100
    for index, path in enumerate(files):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for written in ([], written_lines(text, index), list(range(1, len(text.split("\n")) + 1))):
            expected = [
                node
                for node in ast.walk(tree)
                if isinstance(node, ast.stmt) and node.lineno in written
            ]
            found = [
                node
                for node in layout.statements_on(tree, written)
                if isinstance(node, ast.stmt) and node.lineno in written
            ]
            assert found == expected, (path, written)


def test_the_layout_is_the_same_with_the_verifications_tree() -> None:
    """Given the tree the verification parsed, the layout gives what it gives parsing itself:
    each fixture's expected file laid out against its input (the lines its fixes wrote)."""
    pairs = [
        (expected, Path(str(expected).replace("/expected/", "/input/")))
        for expected in python_files()
        if "/expected/" in str(expected)
    ]
    pairs = [(after, before) for after, before in pairs if before.exists()]
    assert len(pairs) > 50
    changed = 0
    for after_path, before_path in pairs:
        before = before_path.read_text(encoding="utf-8", errors="replace")
        after = after_path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(after)
        except (SyntaxError, ValueError):
            continue
        for style in (Style(88, "double"), Style(40, "double"), Style(40, "single")):
            plain = layout.laid_out(before, after, style)
            assert layout.laid_out(before, after, style, tree) == plain, after_path
            changed += plain != after
    assert changed > 0  # some lines were split or requoted: the walk found their statements
