"""Pull-request review and bulk migration as a user drives them: rule selection and exit policy
like ruff's, partial runs (`check FILE`), each project's own configuration, the plain patch and
its notes, `--patch-dir`, the per-project table, stdin with machine formats, and terminals that
cannot encode the output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.output.patches import project_patch_names
from amp_clipfix.rules import RULES

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample_project"
FABRIC_CODE, TRAINER_CODE = sorted(RULES)[:2]  # the Fabric and the Trainer rule


def invoke(*args: str, input: str | bytes | None = None):  # noqa: ANN201
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def cli(cwd: Path, *args: str, **kwargs) -> subprocess.CompletedProcess[bytes]:  # noqa: ANN003
    """The real console entry point in a subprocess (stdout is a pipe, so patches are plain)."""
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        **kwargs,
    )


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env
    )


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project)
    monkeypatch.chdir(tmp_path)
    return project


@pytest.fixture
def repos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two checkouts of the sample under repos/ (as multi-gitter or a bulk clone leaves them);
    `b` has its own configuration."""
    root = tmp_path / "repos"
    for name in ("a", "b"):
        shutil.copytree(SAMPLE, root / name)
        git(root / name, "init", "-q")
        git(root / name, "add", ".")
        git(root / name, "commit", "-qm", "initial")
    pyproject = root / "b" / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + f'\n[tool.amp-clipfix]\nstrategy = "unfuse"\nlightning-version = "2.4"\n'
        f'ignore = ["{FABRIC_CODE}"]\n'
    )
    monkeypatch.chdir(tmp_path)
    return root


# --- selection and exit policy -------------------------------------------------------------


def test_select_and_ignore_filter_findings_and_what_apply_fixes(sample: Path) -> None:
    only_trainer = invoke("check", "--select", TRAINER_CODE, "sample_project")
    assert TRAINER_CODE in only_trainer.output and f": {FABRIC_CODE}" not in only_trainer.output
    assert only_trainer.exit_code == 1
    prefix = invoke("check", "--select", TRAINER_CODE[:4], "sample_project").output
    assert f": {FABRIC_CODE}" in prefix and f": {TRAINER_CODE}" in prefix  # a prefix selects
    ignored = invoke("check", "--ignore", f"{FABRIC_CODE},{TRAINER_CODE}", "sample_project")
    assert ignored.exit_code == 1 and "1 finding " in ignored.output
    assert "train_fabric.py:18:9: ACF007" in ignored.output  # the fp16 clip by norm stays
    ignored = invoke("check", "--ignore", f"{FABRIC_CODE},{TRAINER_CODE},ACF007", "sample_project")
    assert ignored.exit_code == 0 and "0 findings" in ignored.output
    applied = invoke("apply", "--yes", "--ignore", TRAINER_CODE, "sample_project")
    assert applied.exit_code == 0, applied.output
    model = (sample / "model.py").read_bytes()
    assert b"def configure_gradient_clipping(" not in model  # the ignored finding is kept
    assert b"clip_gradients_unscaled(fabric, " in (sample / "train_fabric.py").read_bytes()


def test_config_select_and_ignore_keys(sample: Path) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + f'\n[tool.amp-clipfix]\nignore = ["{FABRIC_CODE}"]\n'
    )
    result = invoke("check", "sample_project")
    assert f": {FABRIC_CODE}" not in result.output and f": {TRAINER_CODE}" in result.output
    # --select replaces the configuration's select; ignores add up (ruff's rule)
    pyproject.write_text(
        pyproject.read_text().replace(f'ignore = ["{FABRIC_CODE}"]', f'select = ["{TRAINER_CODE}"]')
    )
    assert f": {FABRIC_CODE}" not in invoke("check", "sample_project").output
    widened = invoke("check", "--select", "ALL", "sample_project").output
    assert f": {FABRIC_CODE}" in widened and f": {TRAINER_CODE}" in widened


KNOWN = f"(known codes: {', '.join(sorted(RULES))})"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--select", "ACF998"), f"error: --select: unknown code 'ACF998' {KNOWN}"),
        (("--select", f"{FABRIC_CODE},ACF9"), f"error: --select: unknown code 'ACF9' {KNOWN}"),
        (("--ignore", "acf997"), f"error: --ignore: unknown code 'ACF997' {KNOWN}"),
        (("--select", ""), "error: --select: selects no code (an empty value; known codes:"),
        (("--select", ","), "error: --select: selects no code (an empty value; known codes:"),
        (("--select", " , "), "error: --select: selects no code (an empty value; known codes:"),
    ],
)
def test_an_unknown_code_or_an_empty_selection_is_a_one_line_error(
    sample: Path, args: tuple[str, ...], line: str
) -> None:
    """A typo (or an unset CI variable) would switch the check off for good: exit 2, like ruff."""
    for command in ("check", "apply"):
        result = invoke(command, *args, "sample_project")
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
    assert b"fused=True" in (sample / "train_fabric.py").read_bytes()  # nothing written


@pytest.mark.parametrize(
    ("table", "line"),
    [
        (
            'ignore = ["XYZ1"]',
            f"sample_project/pyproject.toml: error: ignore: unknown code 'XYZ1' {KNOWN}",
        ),
        (
            'select = ["ACF00", "acf1"]',
            "sample_project/pyproject.toml: error: select: unknown code 'ACF1' ",
        ),
        ("select = []", "sample_project/pyproject.toml: error: select: selects no code"),
    ],
)
def test_a_configuration_with_an_unknown_code_is_a_one_line_error(
    sample: Path, table: str, line: str
) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f"\n[tool.amp-clipfix]\n{table}\n")
    result = invoke("check", "sample_project")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr


def test_another_projects_unknown_code_skips_that_project_and_the_run_goes_on(repos: Path) -> None:
    pyproject = repos / "b" / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(f'ignore = ["{FABRIC_CODE}"]', 'ignore = ["ACF0O1"]')
    )
    result = invoke("check", "repos/a", "repos/b")
    assert result.exit_code == 2
    assert (
        f"repos/b/pyproject.toml: error: ignore: unknown code 'ACF0O1' {KNOWN}; project skipped"
        in result.stderr
    )
    assert f"repos/a/train_fabric.py:18:9: {FABRIC_CODE}" in result.stdout  # the run went on
    assert "repos/b/" not in result.stdout


def test_the_review_code_stays_accepted_everywhere(sample: Path) -> None:
    """ACF003, the alias of the review findings (tests/test_review_alias.py), is a known code:
    the sample's findings are all certain, so selecting it leaves none and ignoring it none."""
    review = "ACF003"
    assert review in RULES
    assert invoke("check", "--select", review, "sample_project").exit_code == 0
    for args in (("--ignore", review), ("--select", f"{review},ALL")):
        assert invoke("check", *args, "sample_project").exit_code == 1
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f'\n[tool.amp-clipfix]\nignore = ["{review}"]\n')
    assert invoke("check", "sample_project").exit_code == 1


def test_an_unknown_code_in_a_suppression_comment_is_a_warning(sample: Path) -> None:
    fabric = sample / "train_fabric.py"
    fabric.write_text(fabric.read_text().replace("fused=True)", "fused=True)  # noqa: ACF999"))
    comment = invoke("check", "sample_project").output
    assert (
        "warning: sample_project/train_fabric.py:11: unknown code 'ACF999' in a suppression "
        "comment" in comment
    )
    assert f"train_fabric.py:18:9: {FABRIC_CODE}" in comment  # an unknown code silences nothing


def test_bare_noqa_silences_every_finding_on_its_line_like_ruff(sample: Path) -> None:
    fabric = sample / "train_fabric.py"
    fabric.write_text(fabric.read_text().replace("fused=True)", "fused=True)  # noqa"))
    result = invoke("check", "sample_project")
    assert f"train_fabric.py:18:9: {FABRIC_CODE}" not in result.output
    assert "1 suppressed" in result.output
    fabric.write_text(fabric.read_text().replace("# noqa", f"# noqa: {FABRIC_CODE}"))
    assert "1 suppressed" in invoke("check", "sample_project").output
    fabric.write_text(fabric.read_text().replace(f"# noqa: {FABRIC_CODE}", "# noqa: E501"))
    assert "suppressed" not in invoke("check", "sample_project").output


def test_exit_zero_and_output_file(sample: Path, tmp_path: Path) -> None:
    result = invoke("check", "--exit-zero", "-o", "report.txt", "sample_project")
    assert result.exit_code == 0
    report = (tmp_path / "report.txt").read_text()
    assert f"sample_project/train_fabric.py:18:9: {FABRIC_CODE}" in report
    assert FABRIC_CODE not in result.stdout
    invoke("check", "--format", "sarif", "--output-file", "out.sarif", "sample_project")
    assert '"version": "2.1.0"' in (tmp_path / "out.sarif").read_text()
    (sample / "broken.py").write_text("import torch\ntorch.optim.AdamW(fused=True\n")
    assert invoke("check", "--exit-zero", "sample_project").exit_code == 2  # errors still 2


# --- partial runs and per-project configuration ------------------------------------------


def test_check_a_file_reads_its_whole_project_and_reports_what_touches_it(sample: Path) -> None:
    """What pre-commit passes: model.py alone; the Trainer that clips sits in train_trainer.py."""
    result = invoke("check", "sample_project/model.py")
    assert result.exit_code == 1, result.output
    assert f"sample_project/model.py:21:76: {TRAINER_CODE}" in result.output
    assert "precision: sample_project/train_trainer.py:" in result.output
    assert FABRIC_CODE not in result.output  # train_fabric.py was not named
    trainer_only = invoke("check", "sample_project/train_trainer.py")
    assert f"model.py:21:76: {TRAINER_CODE}" in trainer_only.output  # a site in the named file
    applied = invoke("apply", "--yes", "sample_project/model.py")
    assert applied.exit_code == 0, applied.output
    assert b'"16-mixed"' in (sample / "train_fabric.py").read_bytes()  # not named: untouched


def test_each_project_has_its_own_configuration_in_a_bulk_run(repos: Path) -> None:
    result = invoke("check", "repos/a", "repos/b")
    assert f"repos/a/train_fabric.py:18:9: {FABRIC_CODE}" in result.output
    assert f"repos/b/train_fabric.py:18:9: {FABRIC_CODE}" not in result.output  # b ignores it
    assert f"repos/b/model.py:21:76: {TRAINER_CODE}" in result.output
    broken = repos / "b" / "pyproject.toml"
    broken.write_text(broken.read_text() + "\nstrategy = 3\n")
    skipped = invoke("check", "repos/a", "repos/b")
    assert skipped.exit_code == 2
    assert (
        "repos/b/pyproject.toml" in skipped.output and "project repos/b skipped" in skipped.output
    )
    assert f"repos/a/model.py:21:76: {TRAINER_CODE}" in skipped.output  # the run went on


# --- the plain patch -------------------------------------------------------------------------


def test_plain_patch_notes_each_finding_and_applies_with_git_and_patch(
    sample: Path, tmp_path: Path
) -> None:
    dry = cli(tmp_path, "apply", "--dry-run", "sample_project")
    patch = dry.stdout
    before_first_header = patch.split(b"\n--- a/", 1)[0]
    assert before_first_header.startswith(b"# ")
    assert b"fix (" in patch and b"keeps numerics" in patch  # the fix's safety, in the patch
    assert all(line.startswith(b"# ") for line in before_first_header.splitlines())
    target = tmp_path / "copy"
    shutil.copytree(sample, target / "sample_project")
    (tmp_path / "fix.patch").write_bytes(patch)
    git(target, "init", "-q")
    git(target, "apply", "--check", str(tmp_path / "fix.patch"))
    checked = subprocess.run(
        ["patch", "-p1", "--dry-run", "-i", str(tmp_path / "fix.patch")],
        cwd=target,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    git(target, "apply", str(tmp_path / "fix.patch"))
    assert cli(tmp_path, "apply", "--yes", "sample_project").returncode == 0
    for name in ("model.py", "train_fabric.py"):
        assert (target / "sample_project" / name).read_bytes() == (sample / name).read_bytes()


def test_a_target_outside_the_current_folder_gets_valid_paths(sample: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dry = cli(elsewhere, "apply", "--dry-run", "../sample_project")
    assert b"/../" not in dry.stdout and b"a/.." not in dry.stdout
    assert dry.stdout.startswith(b"# paths are relative to ../sample_project")
    (tmp_path / "fix.patch").write_bytes(dry.stdout)
    git(sample, "init", "-q")
    git(sample, "apply", "--check", str(tmp_path / "fix.patch"))
    checked = subprocess.run(
        ["patch", "-p1", "--dry-run", "-d", str(sample), "-i", str(tmp_path / "fix.patch")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- bulk: --patch-dir and the per-project table ------------------------------------------------


def test_patch_dir_writes_one_patch_per_project_that_git_applies(
    repos: Path, tmp_path: Path
) -> None:
    dry = cli(tmp_path, "apply", "--dry-run", "--patch-dir", "patches", "repos/a", "repos/b")
    assert dry.returncode == 1, dry.stderr
    assert dry.stdout == b""  # the patches are in the folder
    assert sorted(p.name for p in (tmp_path / "patches").iterdir()) == ["a.patch", "b.patch"]
    b_patch = (tmp_path / "patches" / "b.patch").read_bytes()
    assert b"--- a/model.py" in b_patch
    # b ignores ACF001: its Fabric clip keeps the fused optimizer and only gets ACF007's keyword
    fabric_part = b_patch[b_patch.index(b"--- a/train_fabric.py") :]
    assert b"fused=False" not in fabric_part and b"clip_gradients_unscaled" not in fabric_part
    assert (
        b"+        fabric.clip_gradients(model, optimizer, max_norm=1.0, error_if_nonfinite=False)"
        in fabric_part
    )
    for name in ("a", "b"):
        git(repos / name, "apply", str(tmp_path / "patches" / f"{name}.patch"))
        assert git(repos / name, "status", "--porcelain").stdout.strip()
    assert cli(tmp_path, "check", "repos/a").returncode == 0


def test_patch_names_stay_unique() -> None:
    roots = [Path("/x/team1/app"), Path("/x/team2/app"), Path("/y/team1/app"), Path("/z/lib")]
    assert project_patch_names(roots) == [
        "team1-app.patch",
        "team2-app.patch",
        "team1-app-2.patch",
        "lib.patch",
    ]


def test_apply_ends_with_a_per_project_table(repos: Path, tmp_path: Path) -> None:
    dry = cli(tmp_path, "apply", "--dry-run", "repos/a", "repos/b")
    table = dry.stderr.decode()
    header = next(
        line for line in table.splitlines() if cells(line)[:2] == ["project", "Lightning"]
    )
    assert cells(header) == [
        "project",
        "Lightning",
        "from",
        "torch",
        "findings",
        "by rule",
        "fixed",
        "left for review",
        "errors",
    ]
    row_a = cells(next(line for line in table.splitlines() if line.strip().startswith("repos/a")))
    row_b = cells(next(line for line in table.splitlines() if line.strip().startswith("repos/b")))
    assert row_a[1] == "2.6.6" and row_a[3:5] == ["2.13.0", "3"] and "3 pending" in row_a[6]
    assert row_a[2] in ("installed distribution", "no pin found (the latest release)")
    assert row_a[5] == "ACF001 1, ACF002 1, ACF007 1"  # findings per rule
    assert row_b[1:6] == [
        "2.4.0",
        "pyproject.toml [tool.amp-clipfix]",
        "2.13.0",
        "2",
        "ACF002 1, ACF007 1",
    ]
    written = cli(tmp_path, "apply", "--yes", "repos/a", "repos/b")
    row_a = cells(next(line for line in written.stderr.decode().splitlines() if "repos/a" in line))
    assert row_a[:2] + row_a[3:] == [
        "repos/a",
        "2.6.6",
        "2.13.0",
        "3",
        "ACF001 1, ACF002 1, ACF007 1",
        "3",
        "0",
        "0",
    ]


def cells(line: str) -> list[str]:
    """A row of the table: its cells are two or more spaces apart."""
    return re.split(r"\s{2,}", line.strip())


# --- stdin with machine formats ---------------------------------------------------------------


@pytest.mark.parametrize("output_format", ["json", "sarif", "rdjson", "gitlab", "github"])
def test_apply_stdin_prints_only_the_code_on_stdout(sample: Path, output_format: str) -> None:
    code = (sample / "train_fabric.py").read_bytes()
    result = CliRunner().invoke(
        main,
        ["apply", "-", "--stdin-filename", "train.py", "--format", output_format],
        input=code,
    )
    fixed = result.stdout_bytes  # auto's unscale: the helper once, the clip call through it
    assert fixed.count(b"def clip_gradients_unscaled(") == 1
    assert b"        clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)\n" in fixed
    assert b"fabric.clip_gradients(model" not in fixed and b'"16-mixed"' in fixed
    assert FABRIC_CODE in result.stderr


# --- terminals that cannot encode everything --------------------------------------------------


def run_on_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run under a pseudo-terminal (stdin, stdout, stderr), answering each question with no."""
    from test_terminal import QUESTION, Terminal

    terminal = Terminal(args, cwd, env=env)
    while True:
        try:
            terminal.wait_for(QUESTION)
        except AssertionError:  # it ended: no more questions
            break
        terminal.send(b"n\n")
    code, _ = terminal.finish()
    return code, terminal.output


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("args", [["apply"], ["apply", "--dry-run"], ["check", "-v"]])
def test_ascii_terminal_gets_no_traceback(sample: Path, tmp_path: Path, args: list[str]) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    code, output = run_on_terminal([*args, "sample_project"], tmp_path, env)
    assert b"Traceback" not in output and b"UnicodeEncodeError" not in output, output[-3000:]
    assert code == 1
    assert FABRIC_CODE.encode() in output
