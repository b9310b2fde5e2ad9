"""Install commands are parsed once per text in a process (install_readers.install_arguments is
memoised by the text): a pin file edited between runs of one process must change the report
exactly as a cold `--no-cache` run, for `check .` and for the pre-commit hook's command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from piped import amp_clipfix

from amp_clipfix.project.install_readers import install_arguments

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "pin_ci_workflow_2_0_9_precision_migrated" / "input"
WORKFLOW = Path(".github") / "workflows" / "tests.yml"
GIT = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]


def test_the_memo_answers_each_text_as_it_is() -> None:
    before = "python -m pip install lightning==2.0.9 -r requirements.txt\n"
    after = before.replace("2.0.9", "1.9.5")
    assert list(install_arguments(before)) == [
        ("lightning==2.0.9", False),
        ("requirements.txt", True),
    ]
    assert list(install_arguments(after)) == [
        ("lightning==1.9.5", False),
        ("requirements.txt", True),
    ]
    assert list(install_arguments(before)) == [
        ("lightning==2.0.9", False),
        ("requirements.txt", True),
    ]


def _cold(folder: Path, *arguments: str) -> tuple[bytes, int]:
    run = amp_clipfix(folder, "check", "--no-cache", *arguments)
    return run.stdout, run.code


def test_a_pin_edited_between_runs_reports_as_a_cold_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=project, check=True)
    hook = ("--tracked-only", "--force-exclude", "--", "train.py")

    first = amp_clipfix(project, "check", ".")
    assert b"assumed lightning 2.0.9 from .github/workflows/tests.yml" in first.stdout
    assert (first.stdout, first.code) == _cold(project, ".")
    assert amp_clipfix(project, "check", *hook).stdout == _cold(project, *hook)[0]

    workflow = project / WORKFLOW
    workflow.write_text(workflow.read_text().replace("2.0.9", "1.9.5"))
    subprocess.run([*GIT, "add", str(WORKFLOW)], cwd=project, check=True)

    warm = amp_clipfix(project, "check", ".")
    assert b"1.9.5" in warm.stdout and b"2.0.9" not in warm.stdout
    assert warm.stdout != first.stdout
    assert (warm.stdout, warm.code) == _cold(project, ".")
    staged = amp_clipfix(project, "check", *hook)
    assert b"1.9.5" in staged.stdout
    assert (staged.stdout, staged.code) == _cold(project, *hook)
