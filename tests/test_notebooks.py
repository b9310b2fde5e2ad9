"""Notebooks: findings name the cell, fixes touch only the cells' sources, the file stays valid."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTEBOOK_CASES = sorted(path for path in FIXTURES.glob("notebook_*") if (path / "input").is_dir())


@pytest.fixture
def magics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "notebook_magics_guard" / "input", project)
    monkeypatch.chdir(project)
    return project / "train.ipynb"


def invoke(*args: str):  # noqa: ANN201
    return CliRunner().invoke(main, [*args, "--lightning-version", "2.6.6"], catch_exceptions=False)


def test_there_are_enough_notebook_cases() -> None:
    assert len(NOTEBOOK_CASES) >= 5


@pytest.mark.parametrize("case", NOTEBOOK_CASES, ids=lambda path: path.name)
def test_fixed_notebooks_validate_with_nbformat(case: Path) -> None:
    for notebook in (case / "expected").glob("*.ipynb"):
        nbformat.validate(nbformat.read(notebook, as_version=nbformat.NO_CONVERT))


def test_only_the_affected_cells_change_and_magics_stay(magics: Path) -> None:
    before = json.loads(magics.read_text())
    assert invoke("apply", "--yes", "--strategy", "guard", ".").exit_code == 0
    after = json.loads(magics.read_text())
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert changed == [0, 3]  # the imports cell (helper) and the loop cell (guard)
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {
            k: v for k, v in new.items() if k != "source"
        }
    assert after["cells"][0]["source"][0] == "%pip install -q lightning\n"
    assert after["cells"][1] == before["cells"][1]  # the %%time cell
    assert "    !nvidia-smi --query-gpu=memory.used --format=csv\n" in after["cells"][3]["source"]


def test_json_output_points_to_the_cell(magics: Path) -> None:
    document = json.loads(invoke("check", "--format", "json", ".").output)
    finding, nonfinite = document["findings"]
    # reported where auto's fix (unscale) changes the code: the clip call in cell 4
    assert (finding["path"], finding["cell"], finding["line"]) == ("train.ipynb", 4, 4)
    assert {site.get("cell") for site in finding["sites"]} == {3, 4}
    # that fp16 clip by norm is also ACF007's, in the same cell (its fix: the same helper)
    assert (nonfinite["code"], nonfinite["cell"], nonfinite["line"]) == ("ACF007", 4, 4)
    assert [site.get("cell") for site in nonfinite["sites"]] == [4]


def test_terminal_diff_names_the_cells(magics: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("amp_clipfix.cli.plain_output", lambda: False)
    shown = invoke("apply", "--dry-run", "--strategy", "guard", ".").output
    assert "train.ipynb (cell 1)" in shown and "train.ipynb (cell 4)" in shown
    assert "+    if can_clip_gradients(fabric, optimizer):" in shown


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"cells": [', "not a valid notebook: invalid JSON"),
        ('{"cells": [], "nbformat": 3}', "only nbformat 4 is supported"),
    ],
)
def test_broken_notebook_is_one_line_and_the_run_goes_on(
    magics: Path, content: str, message: str
) -> None:
    (magics.parent / "broken.ipynb").write_text(content)
    result = invoke("apply", "--yes", ".")
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if is_error_line(line)]
    assert len(errors) == 1 and "broken.ipynb" in errors[0] and message in errors[0]
    assert "clip_gradients_unscaled(fabric, " in magics.read_text()


def test_plain_patch_applies_to_the_notebook_on_disk(magics: Path) -> None:
    import subprocess

    project = magics.parent
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    patch = (
        CliRunner()
        .invoke(
            main, ["apply", "--dry-run", "--strategy", "guard", "--lightning-version", "2.6.6", "."]
        )
        .stdout_bytes
    )
    assert patch.startswith(b"# ")  # what the fix does, on lines git apply skips
    assert b"\n--- a/train.ipynb\n" in patch
    original = magics.read_bytes()
    subprocess.run(["git", "apply", "-"], input=patch, cwd=project, check=True)
    patched = magics.read_bytes()
    magics.write_bytes(original)
    assert invoke("apply", "--yes", "--strategy", "guard", ".").exit_code == 0
    assert magics.read_bytes() == patched


# --- IPython escapes as IPython reads them (issue 28) -------------------------------------------


def notebook_of(*sources: list[str]) -> str:
    cells = [nbformat.v4.new_code_cell("".join(source)) for source in sources]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells))


CLIPPING = [
    "import lightning as L\n",
    "import torch\n",
    'fabric = L.Fabric(precision="16-mixed")\n',
    "opt = torch.optim.AdamW([], fused=True)\n",
    "fabric.clip_gradients(None, opt, max_norm=1.0)\n",
]
ESCAPED = {
    "continued": ["!pip install torch \\\n", "    lightning==2.4.0 \\\n", "    --quiet\n"],
    "continued-magic": ["%pip install \\\n", "  lightning\n"],
    "assigned": ["gpus = !nvidia-smi -L\n", "elapsed = %timeit -o sum(range(9))\n"],
    "continued-assigned": ["out = !pip install \\\n", "    lightning\n"],
    "in-a-block": ["for _ in range(2):\n", "    !echo hi \\\n", "      there\n", "    x = 1\n"],
    "autocall": ["/print 1\n", ",print a b\n", ";print c\n"],
}


@pytest.mark.parametrize("escaped", ESCAPED, ids=list(ESCAPED))
def test_escaped_commands_over_several_lines_are_kept_out_of_the_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, escaped: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.ipynb").write_text(notebook_of(ESCAPED[escaped], CLIPPING))
    result = invoke("check", ".")
    assert result.exit_code == 1, result.output
    assert "train.ipynb:cell 2:5:1: ACF001" in result.output, result.output
    applied = invoke("apply", "--yes", ".")
    assert applied.exit_code == 0, applied.output
    cells = json.loads((tmp_path / "train.ipynb").read_text())["cells"]
    first = "".join(cells[0]["source"])  # a helper may come first (the module's top)
    assert first.endswith("".join(ESCAPED[escaped])), "the escaped lines are never changed"
    assert invoke("check", ".").exit_code == 0


def test_an_escape_character_inside_a_string_is_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`!` or `%` starting a line inside a triple-quoted string, brackets or a continued line is
    not an escape (IPython only looks where a logical line starts): the code keeps it."""
    from amp_clipfix.sources.notebook import module_lines

    assert module_lines('s = """\n!not a command\n"""\n!ls\n') == [
        's = """',
        "!not a command",
        '"""',
        "#",
        "",
    ]
    assert module_lines("x = (1 +\n  %time\n)\n") == ["x = (1 +", "  %time", ")", ""]
    assert module_lines("x = 1 \\\n  %y\n") == ["x = 1 \\", "  %y", ""]
