"""A fix writes code in the project's style (issue 36).

For every fixture file a fix rewrites: when `ruff format --check` accepts the input, it accepts
the expected output; and ruff's E501 (lines longer than the project's line length) reports no more
lines in the expected output than in the input. The line length and quote style are the
project's own (`project/style.py` reads ruff, black, flake8 and yapf settings; else 88), and ruff
runs `--isolated` with them so that this repository's settings do not leak in.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_fixes_ruff_clean import PAIRS, pair_id, ruff_command
from test_pins import project

from amp_clipfix.cli import main
from amp_clipfix.fixes.layout import laid_out
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


# --- The project's settings, and what the fixes write with them ---------------------------------


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, Style(88, "double")),
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, Style(100, "double")),
        (
            {"ruff.toml": 'line-length = 79\n[format]\nquote-style = "single"\n'},
            Style(79, "single"),
        ),
        (
            {
                ".ruff.toml": "line-length = 120\n",
                "pyproject.toml": "[tool.black]\nline-length = 99\n",
            },
            Style(120, "double"),
        ),
        ({"pyproject.toml": "[tool.black]\nline-length = 99\n"}, Style(99, "double")),
        ({"setup.cfg": "[flake8]\nmax-line-length = 110\n"}, Style(110, "double")),
        ({"tox.ini": "[flake8]\nmax-line-length = 79\n"}, Style(79, "double")),
        ({"pyproject.toml": "[tool.ruff\nbroken"}, Style(88, "double")),
        ({".style.yapf": "[style]\nCOLUMN_LIMIT = 119\n"}, Style(119, "double")),
        ({".style.yapf": "[style]\nbased_on_style = google\n"}, Style(80, "double")),
        ({"setup.cfg": "[yapf]\nBASED_ON_STYLE = pep8\n"}, Style(79, "double")),
        ({"pyproject.toml": "[tool.yapf]\ncolumn_limit = 100\n"}, Style(100, "double")),
        (
            {
                "setup.cfg": "[flake8]\nmax-line-length = 110\n",
                ".style.yapf": "[style]\ncolumn_limit = 119\n",
            },
            Style(110, "double"),
        ),
        (
            {
                ".style.yapf": "[style]\ncolumn_limit = 119\n",
                "setup.cfg": "[yapf]\ncolumn_limit = 90\n",
            },
            Style(119, "double"),
        ),
        ({"setup.cfg": "[isort]\nline_length = 120\n"}, Style(88, "double")),
        ({".style.yapf": "[style]\ncolumn_limit = wide\n"}, Style(88, "double")),
    ],
    ids=[
        "default",
        "ruff-pyproject",
        "ruff-toml",
        "ruff-before-black",
        "black",
        "setup.cfg",
        "tox",
        "bad",
        "yapf",
        "yapf-google",
        "yapf-setup.cfg-pep8",
        "yapf-pyproject",
        "flake8-before-yapf",
        "yapf-file-first",
        "no-yapf-section",
        "yapf-bad",
    ],
)
def test_the_project_style_is_read_from_its_settings(
    tmp_path: Path, files: dict[str, str], expected: Style
) -> None:
    assert project_style(project(tmp_path, files)) == expected


FABRIC = """\
import lightning as L
import torch

fabric = L.Fabric(precision='16-mixed')
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters(), fused=True)
model, optimizer = fabric.setup(model, optimizer)
fabric.backward(model(torch.randn(2, 4)).sum())
norm = fabric.clip_gradients(model, optimizer, max_norm=1.0)  # keep spikes in check
aligned = fabric.clip_gradients(model, optimizer,
                                max_norm=1.0)
optimizer.step()
"""


def apply(project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["apply", "--yes", "--lightning-version", "2.6.6", "."])
    assert result.exit_code == 0, result.output
    return (project / "train.py").read_text(encoding="utf-8")


def test_fixed_code_follows_the_line_length_and_quotes_of_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = apply(project(tmp_path / "a", {"train.py": FABRIC}), monkeypatch)
    assert (
        "norm = clip_gradients_unscaled(\n    fabric, model, optimizer, max_norm=1.0\n)"
        "  # keep spikes in check\n"
    ) in narrow
    assert "aligned = clip_gradients_unscaled(fabric, model, optimizer,\n" in narrow
    column = len("aligned = clip_gradients_unscaled(")
    assert "\n" + " " * column + "max_norm=1.0)\n" in narrow  # realigned to the new `(`
    assert 'getattr(inner, "_step_supports_amp_scaling", False)' in narrow
    settings = '[tool.ruff]\nline-length = 100\n[tool.ruff.format]\nquote-style = "single"\n'
    wide = apply(
        project(tmp_path / "b", {"train.py": FABRIC, "pyproject.toml": settings}), monkeypatch
    )
    assert (
        "norm = clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)"
        "  # keep spikes in check\n"
    ) in wide
    assert "getattr(inner, '_step_supports_amp_scaling', False)" in wide
    assert '    """`fabric.clip_gradients(...)` that' in wide  # docstrings keep double quotes
    style = Style(100, "single")
    check = [*ruff_command(), "format", "--check", "--no-cache", *ruff_options(style)]
    helper_only = tmp_path / "helper.py"
    helper_only.write_text(wide.split("\n\n\nfabric = ")[0] + "\n", encoding="utf-8")
    assert subprocess.run([*check, str(helper_only)], capture_output=True).returncode == 0


CALL = (  # 106 columns in the function: over 88, within 119
    'L.Trainer(strategy="ddp_find_unused_parameters_true", max_epochs=1, precision=16, devices=1)'
)
TRAINER = (
    f"import lightning as L\n\n\ndef test_simple(model):\n    trainer = {CALL}\n"
    "    trainer.fit(model)\n"
)


def test_a_yapf_project_keeps_a_line_that_fits_its_column_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix on a line longer than 88 but within yapf's column_limit leaves it one line (yapf
    would join the split back); without the setting it is split at 88."""
    wide = project(
        tmp_path / "a", {"train.py": TRAINER, ".style.yapf": "[style]\nCOLUMN_LIMIT = 119\n"}
    )
    assert apply(wide, monkeypatch) == TRAINER.replace("precision=16", 'precision="16-mixed"')
    split = apply(project(tmp_path / "b", {"train.py": TRAINER}), monkeypatch)
    assert '        precision="16-mixed",\n' in split


LONG = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccc"


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (  # a line the user wrote is never re-laid out, however long
            f"x = f({LONG})\n",
            f"x = f({LONG})\ny = 1\n",
            f"x = f({LONG})\ny = 1\n",
        ),
        (  # one per line, a magic trailing comma, the comment after `)`
            "x = 1\n",
            f"x = 1\nz = f({LONG}, dddddddddddddddd)  # c\n",
            "x = 1\nz = f(\n    aaaaaaaaaaaaaaaaaaaaaaaaaaaaa,\n"
            "    bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb,\n    cccccccccccccccccc,\n"
            "    dddddddddddddddd,\n)  # c\n",
        ),
        (  # a bare generator takes no trailing comma: left as it is
            "x = 1\n",
            "x = 1\ny = some_function_name(item for item in range(10**40) if item % 7 == 3)\n",
            "x = 1\ny = some_function_name(item for item in range(10**40) if item % 7 == 3)\n",
        ),
        (  # ast counts UTF-8 bytes: a line that is not ASCII is not cut
            "x = 1\n",
            f"x = 1\nz = f('é', {LONG})\n",
            f"x = 1\nz = f('é', {LONG})\n",
        ),
    ],
    ids=["user-line", "one-per-line", "generator", "non-ascii"],
)
def test_layout_touches_only_what_it_can_cut_right(before: str, after: str, expected: str) -> None:
    assert laid_out(before, after, Style(88, "double")) == expected
