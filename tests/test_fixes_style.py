"""A fix writes code in the project's style (issue 36).

For every fixture file a fix rewrites: when `ruff format --check` accepts the input, it accepts
the expected output; and ruff's E501 (lines longer than the project's line length) reports no more
lines in the expected output than in the input. The line length and quote style are the
project's own (`project/style.py` reads ruff, black and flake8 settings; else 88), and ruff runs
`--isolated` with them so that this repository's settings do not leak in.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from test_fixes_ruff_clean import PAIRS, pair_id, ruff_command

from amp_clipfix.project.style import Style, project_style

STYLE_PAIRS = [pair for pair in PAIRS if pair[0].suffix == ".py"]


def fixture_style(original: Path) -> Style:
    """The style of the fixture's project (its `input/` folder)."""
    root = original.parent
    while root.name != "input":
        root = root.parent
    return project_style(root)


def ruff_options(style: Style) -> list[str]:
    return [
        "--isolated",
        "--line-length",
        str(style.line_length),
        "--config",
        f'format.quote-style = "{style.quote}"',
    ]


@pytest.fixture(scope="module")
def verdicts() -> dict[Path, tuple[bool, int]]:
    """Per file: (ruff format would leave it as it is, E501 lines), one ruff run per style."""
    groups: dict[Style, list[Path]] = defaultdict(list)
    for pair in STYLE_PAIRS:
        style = fixture_style(pair[0])
        groups[style].extend(pair)
    found: dict[Path, tuple[bool, int]] = {}
    for style, files in groups.items():
        names = [str(path) for path in files]
        formatted = ruff_json(["format", "--check", *ruff_options(style), *names])
        # a file ruff cannot parse (a fixture about bad input) counts as not formatted
        unformatted = {Path(entry["filename"]) for entry in formatted}
        long_lines = ruff_json(
            ["check", "--exit-zero", *ruff_options(style), "--select", "E501", *names]
        )
        counts = Counter(Path(e["filename"]) for e in long_lines if e["code"] == "E501")
        for path in files:
            found[path] = (path not in unformatted, counts[path])
    return found


def ruff_json(arguments: list[str]) -> list[dict]:
    command = [*ruff_command(), *arguments[:1], "--no-cache", "--output-format", "json"]
    completed = subprocess.run(
        [*command, *arguments[1:]], capture_output=True, encoding="utf-8", check=False
    )
    assert completed.returncode in (0, 1, 2) and completed.stdout, completed.stderr
    return json.loads(completed.stdout or "[]")


def test_there_are_fixed_files_to_check() -> None:
    assert len(STYLE_PAIRS) >= 40


def test_ruff_format_check_sees_an_unformatted_file(tmp_path: Path) -> None:
    """The check has teeth: a helper laid out for line length 100 fails at 88."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(a, b):\n    return some_function_name(a, b, another_argument=a, "
        "one_more_argument=b, last_argument=1)\n"
    )
    command = [*ruff_command(), "format", "--check", "--no-cache", "--isolated", str(bad)]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 1


@pytest.mark.parametrize("pair", STYLE_PAIRS, ids=pair_id)
def test_the_fix_keeps_the_projects_format(
    pair: tuple[Path, Path], verdicts: dict[Path, tuple[bool, int]]
) -> None:
    original, expected = pair
    formatted_before, long_before = verdicts[original]
    formatted_after, long_after = verdicts[expected]
    assert formatted_after or not formatted_before, "ruff format would now reformat the file"
    assert long_after <= long_before, f"E501: {long_before} long lines before, {long_after} after"
