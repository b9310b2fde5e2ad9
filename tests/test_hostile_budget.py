"""Hostile input, round three (issue 39): never a traceback, never exit 1 for an error, bounded
work. Each section is one problem found on 0.10.0; each test failed there.

Exit codes: 1 means "findings" (a CI step that tolerates findings passes it), so an error must
be 2 with one `error:` line naming the file, and the run goes on with the other files.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from test_bounded import Counted, fixed

from amp_clipfix.models import Strategy
from amp_clipfix.output.report import is_error_line
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "fixtures" / "fabric_precision_kwarg_16_mixed" / "input" / "train.py").read_bytes()


def amp_clipfix(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: its own process, its own recursion limit."""
    command = [sys.executable, "-m", "amp_clipfix", *args, "--no-cache"]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=project, timeout=600, check=False
    )


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if is_error_line(line)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b"")
    return root


# --- Deep and wide values: the rules run under the resolution's guard, the evaluator's work is
# --- bounded, a bound hit is a review finding -------------------------------------------------


def setters(count: int, argument: str = "args.fused") -> str:
    """A module whose `FUSED` is stored by `count` setters, each keeping what the others
    stored (`FUSED = v or FUSED`), all called before the optimizer is built."""
    lines = ["import lightning as L", "import torch", "", "FUSED = False", ""]
    for index in range(count):
        lines += [f"def set{index}(v):", "    global FUSED; FUSED = v or FUSED", ""]
    lines += ["def main(model, args):"]
    lines += [f"    set{index}({argument})" for index in range(count)]
    lines += [
        '    fabric = L.Fabric(precision="16-mixed")',
        "    optimizer = torch.optim.AdamW(model.parameters(), fused=FUSED)",
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "",
    ]
    return "\n".join(lines)


def test_a_hundred_global_setters_are_a_finding_not_a_traceback(project: Path) -> None:
    """RecursionError from the rules stage (exit 1, the code of "findings") on 0.10.0."""
    (project / "train.py").write_text(setters(100))
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, result.stderr
    line = 5 + 100 * 3 + 1 + 100 + 3  # the clip call
    assert f"train.py:{line}:5: ACF001" in result.stdout
    assert "if the optimizer is fused" in result.stdout  # `args.fused`: decided at run time


def findings_of(folder: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list]:
    folder.mkdir()
    (folder / "train.py").write_text(source)
    counted = Counted(monkeypatch)
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert not result.errors, result.errors
    found = [(finding.code, finding.confidence.value) for finding in result.findings]
    return counted.evaluations(), found


def test_global_setters_cost_linear_work_and_stay_precise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each setter stores `True`: the optimizer may be fused (or not, when no setter runs),
    however many setters there are (a read of FUSED inside a setter adds nothing to the read
    around it, and no value is lost to a cycle cut), and four
    times the setters cost about four times the evaluations (each read walked every path
    through the others: 18 s at 90 setters, a RecursionError at 100)."""
    small, small_found = findings_of(tmp_path / "a", setters(100, "True"), monkeypatch)
    large, large_found = findings_of(tmp_path / "b", setters(400, "True"), monkeypatch)
    assert small_found == large_found == [("ACF001", "review"), ("ACF007", "high")]
    assert large <= 5 * small


def chain(names: int) -> str:
    """`X1 = X0`, `X2 = X1`, ... : a value followed through `names` assignments."""
    lines = ["import lightning as L", "import torch", "", "X0 = True"]
    lines += [f"X{index + 1} = X{index}" for index in range(names)]
    lines += [
        "",
        "def main(model):",
        '    fabric = L.Fabric(precision="16-mixed")',
        f"    optimizer = torch.optim.AdamW(model.parameters(), fused=X{names})",
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "",
    ]
    return "\n".join(lines)


def test_a_value_followed_too_deep_is_a_review_finding(project: Path) -> None:
    """3,000 names in a chain: past the evaluator's nesting bound the value is decided at run
    time (a review finding), before Python's stack gives out (a traceback on 0.10.0)."""
    (project / "train.py").write_text(chain(3_000))
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, result.stderr
    assert "review: whether the optimizer is fused is decided at run time" in result.stdout
    (project / "train.py").write_text(chain(100))  # within the bound: followed to its literal
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "fused optimizer: train.py:4 torch.optim.AdamW(fused=X100), decided here" in (
        result.stdout
    )


def test_a_rule_that_fails_is_one_error_line_and_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a rule raises (a RecursionError included) is one line naming the project,
    exit 2; the findings of the files' own sites still stand."""
    from click.testing import CliRunner

    from amp_clipfix import rules
    from amp_clipfix.cli import main
    from amp_clipfix.records import replace

    def deep(*arguments: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(rules.RULES, "ACF007", replace(rules.RULES["ACF007"], check=deep))
    monkeypatch.chdir(project)
    (project / "train.py").write_bytes(GOOD)
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--lightning-version", "2.6.6"], catch_exceptions=False
    )
    assert result.exit_code == 2, result.output
    assert error_lines(result.output) == [".: error: the rules gave up (code nested too deeply)"]
    assert "train.py:19:9: ACF001" in result.output


# --- Integers past Python's int-to-text limit (4,300 digits): one line, never a traceback -----

HUGE = "1" * 5_000
NOTEBOOK = (
    '{"cells": [{"cell_type": "code", "execution_count": %s, "metadata": {}, "outputs": [],'
    ' "source": ["x = 1\\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
)


def test_a_huge_integer_in_a_notebook_is_one_error_line(project: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    (project / "big.ipynb").write_text(NOTEBOOK % HUGE)
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr
    assert error_lines(result.stderr) == [
        "big.ipynb: error: not a valid notebook: a number of more than 4,300 digits"
    ]
    assert "train.py:19:9: ACF001" in result.stdout  # the run went on


@pytest.mark.parametrize("table", ["tool.other", "project.optional-dependencies.big"])
def test_a_huge_integer_in_a_pyproject_table_is_one_error_line(project: Path, table: str) -> None:
    """Any table of the configuration's pyproject.toml: one line naming it, exit 2, as any
    pyproject.toml that is not valid TOML."""
    value = HUGE if table == "tool.other" else f"[{HUGE}]"
    (project / "pyproject.toml").write_text(f"[{table}]\nn = {value}\n")
    (project / "train.py").write_bytes(GOOD)
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "pyproject.toml: error: invalid TOML: a number of more than 4,300 digits"
    )


UV_LOCK = 'version = 1\n\n[[package]]\nname = "lightning"\nversion = "2.6.6"\nsize = {}\n'
POETRY_LOCK = '[[package]]\nname = "lightning"\nversion = "2.6.6"\nsize = {}\n'


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("uv.lock", UV_LOCK.format(HUGE)),
        ("poetry.lock", POETRY_LOCK.format(HUGE)),
        ("pdm.lock", POETRY_LOCK.format(HUGE)),
        ("uv.lock", UV_LOCK.replace("2.6.6", "2." + HUGE).format(1)),
        ("requirements.txt", f"lightning==2.{HUGE}\n"),
        ("requirements.txt", f"lightning>=2.{HUGE}\n"),
        ("pyproject.toml", f'[project]\nname = "x"\ndependencies = ["lightning=={HUGE}"]\n'),
        ("environment.yml", f"dependencies:\n  - pip:\n    - lightning=={HUGE}.0\n"),
    ],
)
def test_a_huge_number_in_a_pin_file_is_one_error_line_and_the_pin_is_not_used(
    project: Path, name: str, content: str
) -> None:
    """A number or version past Python's limit is bad input, as in a notebook or the
    configuration: one error line naming the file, exit 2; the pin is not used (the release
    comes from the next source) and the run goes on."""
    (project / name).write_text(content)
    (project / "train.py").write_bytes(GOOD)
    result = amp_clipfix(project, "check")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr
    assert not [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    errors = error_lines(result.stderr)
    assert len(errors) == 1 and errors[0].startswith(f"{name}: error: "), errors
    assert "a number of more than 4,300 digits; not used for the Lightning version" in errors[0]
    assert "train.py:19:9: ACF001" in result.stdout


def test_huge_literals_in_code_and_configs_are_values_like_any_other(project: Path) -> None:
    """A hex literal has no digit limit in Python, but its decimal text has: the evaluator
    reads it as a value (an internal error of the resolution on 0.10.0); a YAML config's huge
    numbers are read as numbers."""
    code = GOOD.replace(b"fused=True", b"fused=FLAG").replace(
        b"import torch\n", b"import torch\n\nFLAG = 0x" + b"f" * 5_000 + b"\n"
    )
    (project / "train.py").write_bytes(code)
    config = (
        f"trainer:\n  precision: 16-mixed\n  gradient_clip_val: {HUGE}\n  amp_backend: {HUGE}\n"
        f"optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    fused: {HUGE}\n"
    )
    (project / "config.yaml").write_text(config)
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, result.stderr
    assert not error_lines(result.stderr)
    assert "train.py:21:9: ACF007" in result.stdout
    assert "config.yaml:2:14: ACF002" in result.stdout
    assert "config.yaml:4:3: ACF010" in result.stdout


# --- File names that are not UTF-8: shown escaped everywhere, never a traceback ---------------

# A module whose optimizer's `fused` is a parameter: its callers are searched by the module's
# name, which holds the name's bytes that are not UTF-8 (a UnicodeEncodeError on 0.10.0).
BUILDER = GOOD.replace(
    b"    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\n",
    b"    optimizer = build(model, True)\n",
).replace(
    b"def main():",
    b"def build(model, fused):\n"
    b"    return torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)\n\n\ndef main():",
)
ODD = "\udcff"  # os.fsdecode(b"\xff"): how Python names the byte


@pytest.mark.parametrize("output", ["text", "json", "sarif", "github"])
def test_a_name_that_is_not_utf8_is_shown_escaped_in_every_format(
    project: Path, output: str
) -> None:
    (project / f"m{ODD}.py").write_bytes(BUILDER)
    (project / "train.py").write_bytes(GOOD)
    result = amp_clipfix(project, "check", "--lightning-version", "2.6.6", "--format", output)
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, result.stderr
    result.stdout.encode("utf-8")  # text: no raw byte of the name, no lone surrogate
    shown = {
        "text": "m\\udcff.py:23:9: ACF001",
        "json": '"path": "m\\udcff.py"',
        "sarif": '"uri": "m%FF.py"',
        "github": "::error title=ACF001::m\\udcff.py:23:9: ",
    }
    assert shown[output] in result.stdout
    assert "train.py" in result.stdout  # the run went on


def test_a_patch_names_a_file_that_is_not_utf8_as_git_does(project: Path) -> None:
    """The header quotes the bytes git quotes (`"a/m\\377.py"`), and `git apply` takes it."""
    (project / f"m{ODD}.py").write_bytes(BUILDER)
    subprocess.run(["git", "init", "-q", "."], cwd=project, check=True)
    patch = amp_clipfix(project, "apply", "--dry-run", "--strategy", "unfuse")
    assert "Traceback" not in patch.stderr, patch.stderr[-2000:]
    assert patch.returncode == 1, patch.stderr
    assert '\n--- "a/m\\377.py"\n+++ "b/m\\377.py"\n' in patch.stdout
    folder = project.parent / "patches"
    written = amp_clipfix(project, "apply", "--dry-run", "--patch-dir", str(folder))
    assert "Traceback" not in written.stderr, written.stderr[-2000:]
    assert written.returncode == 1, written.stderr
    assert '\n--- "a/m\\377.py"\n' in "\n" + (folder / "project.patch").read_text()
    (project / "fix.patch").write_text(patch.stdout)
    subprocess.run(["git", "apply", "fix.patch"], cwd=project, check=True)
    assert b"build(model, False)" in (project / f"m{ODD}.py").read_bytes()


# --- A helper-module that does not parse: one line, nothing written ---------------------------

HELPER_CASE = REPO / "fixtures" / "trainer_unscale_helper_module_created" / "input"
CONFLICT = "<<<<<<< HEAD\ndef a():\n    pass\n=======\ndef b():\n    pass\n>>>>>>> theirs\n"


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".amp_clipfix_cache" not in p.parts
    }


@pytest.mark.parametrize("how", ["--yes", "--dry-run"])
def test_a_helper_module_with_conflict_markers_is_one_line_and_nothing_is_written(
    tmp_path: Path, how: str
) -> None:
    import shutil

    root = tmp_path / "helpers"
    shutil.copytree(HELPER_CASE, root)
    (root / "mypkg" / "amp_helpers.py").write_text(CONFLICT)
    before = snapshot(root)
    result = amp_clipfix(
        root, "apply", how, "--strategy", "unscale", "--lightning-version", "2.6.6"
    )
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr
    errors = error_lines(result.stderr)
    assert len(errors) == 2, errors
    assert errors[0].startswith(
        "mypkg/amp_helpers.py: error: helper-module mypkg.amp_helpers: cannot be created or "
        "updated: cannot parse: "
    )
    assert errors[1] == (
        "mypkg/model.py: error: not fixed: it would import from helper-module mypkg.amp_helpers"
    )
    assert snapshot(root) == before


# --- Any internal error: one line naming the file, exit 2, the other files go on --------------

BAD = GOOD + b"# bad\n"  # a file a stage fails on (the patched function tells it by this line)
GOOD_FIXED = GOOD.replace(b"fused=True", b"fused=False").replace(
    b"max_norm=1.0)", b"max_norm=1.0, error_if_nonfinite=False)"
)
BOOM = "RuntimeError('boom')"


def boom() -> None:
    raise RuntimeError("boom")


def failing(original, is_bad):  # noqa: ANN001, ANN201 - wraps any stage's function
    def wrapped(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
        if is_bad(*arguments, **keywords):
            boom()
        return original(*arguments, **keywords)

    return wrapped


def named_bad(path: object, *rest: object, **keywords: object) -> bool:
    return getattr(path, "name", None) == "bad.py"


def always(*arguments: object, **keywords: object) -> bool:
    return True


def prefilter_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    from amp_clipfix.sources.python import PythonSource

    original = PythonSource.prefilter

    def prefilter(self, stage):  # noqa: ANN001, ANN202
        test = original(self, stage)
        return failing(test, lambda data: b"# bad" in data)

    monkeypatch.setattr(PythonSource, "prefilter", prefilter)


def stage_patches(monkeypatch: pytest.MonkeyPatch, stage: str) -> None:  # noqa: C901
    """Make `stage` fail: on bad.py for a stage per file, on the project or run for the others."""
    import amp_clipfix.analysis.read as read
    import amp_clipfix.analysis.resolve as resolve
    import amp_clipfix.fixes.choose as choose
    import amp_clipfix.fixes.transform as transform
    import amp_clipfix.observed as observed
    import amp_clipfix.output.patches as patches
    import amp_clipfix.output.write as write
    import amp_clipfix.pipeline as pipeline
    import amp_clipfix.running as running
    import amp_clipfix.sources.python as python
    from amp_clipfix import rules
    from amp_clipfix.records import replace

    if stage == "discover":
        monkeypatch.setattr(pipeline, "discover", failing(pipeline.discover, always))
    elif stage == "read":
        monkeypatch.setattr(observed, "read_bytes", failing(observed.read_bytes, named_bad))
    elif stage == "prefilter":
        prefilter_failing(monkeypatch)
    elif stage == "parse":
        bad_document = lambda document: document.path.name == "bad.py"  # noqa: E731
        monkeypatch.setattr(read, "read_document", failing(read.read_document, bad_document))
    elif stage == "resolve":
        monkeypatch.setattr(resolve.Resolution, "run", failing(resolve.Resolution.run, always))
    elif stage == "rules":
        rule = rules.RULES["ACF007"]
        monkeypatch.setitem(rules.RULES, "ACF007", replace(rule, check=failing(rule.check, always)))
    elif stage == "choose":
        monkeypatch.setattr(choose, "choose_fixes", failing(choose.choose_fixes, always))
    elif stage == "transform":
        bad_file = lambda file, *rest: file.document.path.name == "bad.py"  # noqa: E731
        monkeypatch.setattr(transform, "fixed_text", failing(transform.fixed_text, bad_file))
    elif stage == "verify":
        bad_text = lambda original, new: "# bad" in original  # noqa: E731
        monkeypatch.setattr(python, "verify_python", failing(python.verify_python, bad_text))
    elif stage == "diff":
        bad_path = lambda old, new, path, **keywords: path == "bad.py"  # noqa: E731
        monkeypatch.setattr(patches, "format_patch", failing(patches.format_patch, bad_path))
    elif stage == "report":
        monkeypatch.setattr(running, "emit_report", failing(running.emit_report, always))
    elif stage == "write":
        bad_source = lambda source, *rest, **keywords: source.path.name == "bad.py"  # noqa: E731
        monkeypatch.setattr(write, "write_atomic", failing(write.write_atomic, bad_source))


STAGES = {  # stage: (the error line, whether it is a stage per file: good.py is fixed then)
    "discover": (f".: error: internal error in finding the files: {BOOM}", False),
    "read": (f"bad.py: error: internal error while reading: {BOOM}", True),
    "prefilter": (f"bad.py: error: internal error in the prefilter: {BOOM}", True),
    "parse": (f"bad.py: error: internal error while reading sites: {BOOM}", True),
    "resolve": (f".: error: internal error in the project resolution: {BOOM}", False),
    "rules": (f".: error: internal error in the rules: {BOOM}", False),
    "choose": (f".: error: internal error in choosing fixes: {BOOM}", False),
    "transform": (f"bad.py: error: not fixed: internal error: {BOOM}", True),
    "verify": (f"bad.py: error: not fixed: internal error: {BOOM}", True),
    "diff": (f"bad.py: error: not fixed: internal error in the diff: {BOOM}", True),
    "report": (f"<stderr>: error: internal error in the report: {BOOM}", False),
    "write": (f"bad.py: error: not written: internal error: {BOOM}", True),
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_an_internal_error_in_any_stage_is_one_line_and_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    from click.testing import CliRunner

    from amp_clipfix.cli import main

    (project / "good.py").write_bytes(GOOD)
    (project / "bad.py").write_bytes(BAD)
    monkeypatch.chdir(project)
    stage_patches(monkeypatch, stage)
    arguments = ["apply", "--yes", "--no-cache", "--strategy", "unfuse"]
    result = CliRunner().invoke(
        main, [*arguments, "--lightning-version", "2.6.6"], catch_exceptions=False
    )
    line, per_file = STAGES[stage]
    assert result.exit_code == 2, result.output
    assert error_lines(result.output) == [line]
    if per_file:  # the other file went on
        assert (project / "good.py").read_bytes() == GOOD_FIXED
    for name in ("good.py", "bad.py"):  # whatever was written is whole
        ast.parse((project / name).read_bytes())


# --- The fix stage on a large data literal the code reads: bounded like the check -------------


def table_module(rows: int, newline: str = "\n") -> str:
    """A module whose code reads one large table (`TABLE["precision"]`): 0.5 MB at 14,000
    rows took `apply --dry-run` 27-55 s and 600 MB, `check` 1 s."""
    lines = ["import lightning as L", "import torch", "", "TABLE = {"]
    lines += [
        f"    'key_{i}': [{i}, {-i}, 'value {i}', {{'a': (1.5, None)}}],  # {i}"
        for i in range(rows)
    ]
    lines += [
        "    'precision': '16-mixed',",
        "    'rows': [",
        *[f"        ({i}, 'row'), " for i in range(rows // 4)],
        "    ],",
        "    'device': DEVICE,",
        "}",
        "",
        "",
        "def main(model):",
        "    fabric = L.Fabric(precision=TABLE['precision'])",
        "    optimizer = torch.optim.AdamW(model.parameters(), fused=True)",
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "",
    ]
    return newline.join(lines)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("strategy", [Strategy.AUTO, Strategy.BF16])
def test_a_large_table_the_code_reads_gives_libcst_only_what_the_fix_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: str, strategy: Strategy
) -> None:
    """The table's binding, its container and its named entries stay; its literal rows are
    one string token for libcst; the bytes are those of fixing the whole module (bf16 edits
    the table's own `'16-mixed'`)."""
    source = table_module(300, newline)
    data, parsed, _ = fixed(tmp_path / "elided", source, monkeypatch, strategy=strategy)
    whole, _, _ = fixed(tmp_path / "whole", source, monkeypatch, whole=True, strategy=strategy)
    assert data == whole
    assert len(parsed) == 1 and len(parsed[0]) < len(source) / 10
    assert parsed[0].count(newline) == source.count(newline)  # lines keep their numbers
    assert "TABLE = {" in parsed[0] and "'device': DEVICE," in parsed[0]
    if strategy is Strategy.BF16:
        assert b"'precision': 'bf16-mixed'," in data
