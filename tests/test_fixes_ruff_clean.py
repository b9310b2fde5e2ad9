"""No fix adds a ruff diagnostic to the file it rewrites (issue 13).

ruff runs, as a user would run it, on every fixture's input and expected output (Python files and
notebooks). A fix may leave a diagnostic the user already had, and may remove one, but a
diagnostic in the expected file that the input did not have is a defect of the codemod that wrote
it: an import left unused (F401), a variable left unused (F841), code put between imports (E402),
imports left unsorted (I001) or blank lines that break PEP 8 (E3, a preview rule set in ruff).

Diagnostics are compared by (code, message) and counted, because a fix moves lines: the message
names the import or variable, so an unused `GradScaler` import does not hide behind another one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RULES = "F401,F841,E402,I001,E3"
SUFFIXES = (".py", ".ipynb")

Diagnostic = tuple[str, str]  # (code, message)


def ruff_command() -> list[str]:
    """ruff from the test's own environment (the venv's script), else from PATH."""
    beside = Path(sys.executable).with_name("ruff")
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("the ruff-clean test needs ruff (pip install ruff)", pytrace=False)
    return [found]


def fixed_pairs() -> list[tuple[Path, Path]]:
    """(input file, expected file) for every fixture file a fix rewrites."""
    pairs = []
    for expected_root in sorted(FIXTURES.glob("*/expected")):
        input_root = expected_root.parent / "input"
        for expected in sorted(expected_root.rglob("*")):
            if expected.suffix not in SUFFIXES or not expected.is_file():
                continue
            original = input_root / expected.relative_to(expected_root)
            if original.is_file() and original.read_bytes() != expected.read_bytes():
                pairs.append((original, expected))
    return pairs


PAIRS = fixed_pairs()


def pair_id(pair: tuple[Path, Path]) -> str:
    original, _ = pair
    return original.relative_to(FIXTURES).as_posix().replace("/input/", "/")


@pytest.fixture(scope="module")
def diagnostics() -> dict[Path, Counter[Diagnostic]]:
    """One ruff run over every file of every pair, grouped by file."""
    files = [str(path) for pair in PAIRS for path in pair]
    command = [
        *ruff_command(),
        "check",
        "--isolated",
        "--preview",
        "--no-cache",
        "--exit-zero",
        "--select",
        RULES,
        "--output-format",
        "json",
        *files,
    ]
    completed = subprocess.run(command, capture_output=True, encoding="utf-8", check=False)
    assert completed.returncode == 0, completed.stderr
    found: dict[Path, Counter[Diagnostic]] = {Path(name): Counter() for name in files}
    for entry in json.loads(completed.stdout):
        if entry["code"] is None:  # a syntax error: the fixture is about bad input, not style
            continue
        found[Path(entry["filename"])][(entry["code"], entry["message"])] += 1
    return found


def test_there_are_fixed_files_to_check() -> None:
    assert len(PAIRS) >= 40
    assert any(original.suffix == ".ipynb" for original, _ in PAIRS)


def test_ruff_sees_what_this_test_looks_for(tmp_path: Path) -> None:
    """The selection has teeth: each code family is reported on a file that breaks it."""
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\nx = 1\nimport re\ndef f():\n    y = 1\n")
    command = [*ruff_command(), "check", "--isolated", "--preview", "--no-cache", "--exit-zero"]
    command += ["--select", RULES, "--output-format", "json", str(bad)]
    completed = subprocess.run(command, capture_output=True, encoding="utf-8", check=True)
    codes = {entry["code"] for entry in json.loads(completed.stdout)}
    assert {"F401", "F841", "E402", "I001", "E302"} <= codes


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_fix_adds_no_ruff_diagnostic(
    pair: tuple[Path, Path], diagnostics: dict[Path, Counter[Diagnostic]]
) -> None:
    original, expected = pair
    added = diagnostics[expected] - diagnostics[original]
    assert not added, "the fix added: " + "; ".join(
        f"{code} {message} (x{count})" for (code, message), count in sorted(added.items())
    )
