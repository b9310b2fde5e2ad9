"""Where an inserted helper lands: after every import, before its first use, PEP 8 spaced."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest

from amp_clipfix.fixes.codemods.insert import has_helper, insert_helper

HELPER = 'def helper(x):\n    """Inserted."""\n    return x\n'

MODULES = {
    "docstring-future-imports": '''\
        """Docstring."""

        from __future__ import annotations

        import os


        def main():
            return helper(os)
        ''',
    "try-import-and-type-checking": """\
        import os
        from typing import TYPE_CHECKING

        try:
            import yaml
        except ImportError:  # optional
            yaml = None
        else:
            pass
        if TYPE_CHECKING:
            import numpy
        # a comment about the code
        VALUE = 1


        def main():
            return helper(yaml)
        """,
    "version-dependent-import": """\
        import sys

        if sys.version_info >= (3, 11):
            import tomllib
        elif sys.version_info >= (3, 8):
            import tomli as tomllib
        else:
            tomllib = None
        print(helper(tomllib))
        """,
    "code-between-imports": """\
        import sys

        sys.path.insert(0, ".")
        import os  # noqa: E402

        x = helper(os)
        """,
    "no-imports": """\
        x = helper(1)
        """,
    "only-imports": """\
        import os
        """,
    "imports-then-class": """\
        import os
        class A:
            pass
        """,
}


def ruff_codes(code: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "module.py"
    path.write_text(code)
    ruff = str(Path(sys.executable).with_name("ruff"))
    command = [ruff, "check", "--isolated", "--preview", "--no-cache", "--exit-zero"]
    command += ["--select", "E402,E3,F821", "--output-format", "json", str(path)]
    completed = subprocess.run(command, capture_output=True, encoding="utf-8", check=True)
    return sorted(entry["code"] for entry in json.loads(completed.stdout))


@pytest.mark.parametrize("name", MODULES)
def test_helper_goes_after_the_imports_and_adds_no_ruff_diagnostic(
    name: str, tmp_path: Path
) -> None:
    source = textwrap.dedent(MODULES[name])
    module = insert_helper(cst.parse_module(source), HELPER)
    code = module.code

    helper_line = code.index("def helper(")
    last_import = max(code.rfind("import "), code.rfind("from "))
    assert helper_line > last_import, code
    uses = code.find("helper(", helper_line + len("def helper("))
    assert uses == -1 or uses > helper_line, code
    before = Counter(ruff_codes(source, tmp_path))
    before.pop("F821", None)  # the helper was undefined before
    assert not Counter(ruff_codes(code, tmp_path)) - before, code
    assert has_helper(module, "helper")


def test_exact_layout_after_a_type_checking_block() -> None:
    source = textwrap.dedent(MODULES["try-import-and-type-checking"])
    code = insert_helper(cst.parse_module(source), HELPER).code
    assert "\n    import numpy\n\n\ndef helper(x):\n" in code
    assert "    return x\n\n\n# a comment about the code\nVALUE = 1\n" in code


def test_newlines_of_the_module_are_kept() -> None:
    module = cst.parse_module("import os\r\n\r\nx = 1\r\n")
    code = insert_helper(module, HELPER).code
    assert "\n" not in code.replace("\r\n", "")
    assert code.startswith("import os\r\n\r\n\r\ndef helper(x):\r\n")
