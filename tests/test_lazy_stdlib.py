"""Standard-library modules a small project's run never uses are imported where they are used:
importing the module that may need one does not import it (each ~1 % of such a run)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from amp_clipfix.analysis.ast_syntax import string_token_count


def modules_after_import(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize(
    ("module", "unused"),
    [
        ("amp_clipfix.analysis.ast_syntax", "tokenize"),
    ],
)
def test_a_module_imports_no_stdlib_module_it_may_not_use(module: str, unused: str) -> None:
    modules = modules_after_import(module)
    assert module in modules and unused not in modules


@pytest.mark.parametrize(
    ("code", "tokens"),
    [('"a"', 1), ("('a')", 1), ('"a" "b"', 2), ("('a'\n 'b')", 2), ('"a\\"b"', 1), ("f'{x}'", 1)],
)
def test_a_literal_counts_its_string_tokens(code: str, tokens: int) -> None:
    assert string_token_count(code) == tokens
