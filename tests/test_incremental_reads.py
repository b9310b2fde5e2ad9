"""Issue 35's after-edit promise, for answers reached through callers (session 15, `reads`): a
warm run after an edit prints the bytes of a cold `--no-cache` run when the edit changes a
value two calls away from the site that reports it, at the full budget and at budgets small
enough to cut answers; and the pre-commit command's path (`--tracked-only`) after an edit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import (
    base_project,
    computed,
    edit_line,
    reused,
    same_as_cold,
    spied_queries,
    write,
)

from amp_clipfix.analysis import frame

# The factory's `fused` comes from a wrapper's parameter, which comes from the module's call:
# module.py -> wrap.py -> factory.py. Only the module's literal decides the finding.
WRAP = """from pkg.factory import make_optimizer


def build(params, fused):
    return make_optimizer(params, fused=fused)
"""
MODULE = """import lightning as L
from pkg.wrap import build


class Module(L.LightningModule):
    def configure_optimizers(self):
        return build(self.parameters(), fused={fused})
"""


asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = base_project(tmp_path, monkeypatch, "False")
    write(root, "pkg/wrap.py", WRAP)
    write(root, "pkg/module.py", MODULE.format(fused="False"))
    write(root, "pkg/helper.py", "def helper(x):\n    return x + 1\n")
    return root


# Each edit in turn; the value the factory's `fused` gets changes at the end of a caller chain.
CHAIN_EDITS = (
    ("the far caller says fused", edit_line("pkg/module.py", "fused=False", "fused=True")),
    ("a file no query reads", edit_line("pkg/helper.py", "x + 1", "x + 2")),
    (
        "the middle link drops the value",
        edit_line("pkg/wrap.py", "fused=fused)", "fused=False)"),
    ),
    ("the middle link passes it again", edit_line("pkg/wrap.py", "fused=False)", "fused=fused)")),
    (
        "the scaled clip unscaled",
        edit_line(
            "scaled.py",
            "    torch.nn.utils",
            "    scaler.unscale_(optimizer)\n    torch.nn.utils",
        ),
    ),
    ("the far caller says no", edit_line("pkg/module.py", "fused=True", "fused=False")),
    (
        "a second far caller",
        lambda root: write(
            root, "pkg/other.py", MODULE.format(fused="True").replace("Module", "Other")
        ),
    ),
)


def test_an_edit_at_the_end_of_a_caller_chain_changes_the_finding_as_a_cold_run(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """The finding follows the far caller's literal through the wrapper, edit after edit, and
    the warm run equals the cold one each time; the file no query reads reuses every query."""
    reports = [same_as_cold(project, "--format", "json")]
    for name, edit in CHAIN_EDITS:
        asked.clear()
        edit(project)
        reports.append(same_as_cold(project, "--format", "json"))
        if name == "a file no query reads":
            assert asked and computed(asked) == [], asked
        if name == "the far caller says fused":
            assert "resolve" not in reused(asked)
    assert b"ACF002" not in reports[0]
    assert b"ACF002" in reports[1]  # the far caller's literal, two calls away
    assert b"ACF002" not in reports[3]  # the middle link cut the chain
    assert b"ACF002" in reports[4]
    assert b"pkg/other.py" in reports[-1]


@pytest.mark.parametrize("budget", [8, 60])
def test_a_caller_chain_edit_under_a_budget_that_cuts_answers(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """The same edits with a run's budget small enough that the evaluator cuts answers
    somewhere along the chain: a cut answer depends on the work done before it, and the warm
    run still prints the cold run's bytes after every edit."""
    monkeypatch.setattr(frame, "BUDGET", budget)
    reports = {same_as_cold(project, "--format", "json")}
    for _, edit in CHAIN_EDITS:
        edit(project)
        reports.add(same_as_cold(project, "--format", "json"))
    assert len(reports) >= 2, "the edits changed nothing the report says"


def test_a_budget_this_small_changes_the_report(project: Path) -> None:
    """The budget test above cuts answers: at a budget of 8 the far caller's value is no
    longer followed to the factory (so the report is not the full budget's)."""
    edit_line("pkg/module.py", "fused=False", "fused=True")(project)
    full = amp_clipfix(project, "check", "--no-cache", entry=False).stdout
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(frame, "BUDGET", 8)
        cut = amp_clipfix(project, "check", "--no-cache", entry=False).stdout
    assert cut != full


GIT = ["git", "-c", "user.email=a@b.invalid", "-c", "user.name=a"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_pre_commit_command_after_a_caller_chain_edit(project: Path) -> None:
    """The hook's command (`check --tracked-only --force-exclude -- FILE`) on the staged far
    caller, and on the factory it changes, equals the cold run; a file named that git does not
    track is skipped with one warning line."""
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=project, check=True)
    hook = ("--tracked-only", "--force-exclude", "--")
    same_as_cold(project, *hook, "pkg/module.py")
    edit_line("pkg/module.py", "fused=False", "fused=True")(project)
    subprocess.run([*GIT, "add", "pkg/module.py"], cwd=project, check=True)
    assert b"ACF002" in same_as_cold(project, *hook, "pkg/module.py", "pkg/factory.py")
    write(project, "pkg/untracked.py", MODULE.format(fused="True"))
    run = amp_clipfix(project, "check", *hook, "pkg/untracked.py", entry=False)
    assert b"pkg/untracked.py" not in run.stdout
    assert run.stderr.count(b"not tracked by git; skipped") == 1
    assert b"untracked.py: not tracked by git; skipped" in run.stderr


def test_a_text_tests_witness_edited_reuses_the_rules_when_its_answer_stands(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """`a_first.py` is the first file that names `GradScaler` (ACF004 searches only a project
    that does): the `may_name` answer's witness. The name removed there, `may_name` is asked
    again and gives the same answer (scaled.py names it too): the queries after it depend on
    that answer, not on what it read, and are all reused. Then scaled.py stops naming it: the
    answer changes, ACF004 no longer searches, and the report follows."""
    write(project, "a_first.py", '"""Notes on the GradScaler."""\n\nVALUE = 1\n')
    before = same_as_cold(project)
    assert b"ACF004" in before
    asked.clear()
    edit_line("a_first.py", "the GradScaler", "the scaler")(project)
    same_as_cold(project)
    assert computed(asked) == ["may_name"], asked
    asked.clear()
    edit_line("scaled.py", "torch.cuda.amp.GradScaler()", "make_scaler()")(project)
    after = same_as_cold(project)
    assert "may_name" in computed(asked) and b"ACF004" not in after


def test_an_unchanged_project_with_an_evaluator_is_answered_by_the_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: list[tuple[str, bool]]
) -> None:
    """A collection whose resolution made an evaluator is not restored whole (the rules would
    run on a new one): the second run, no replay, answers every query from the cache, computes
    none, and prints the first run's bytes."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    project = tmp_path / "project"
    fixture = (
        Path(__file__).resolve().parent.parent / "fixtures" / "trainer_factory_other_module_unfuse"
    )
    shutil.copytree(fixture / "input", project)
    write(project, "broken.py", "def broken(:\n    AdamW(p, fused=True)\n")
    first = amp_clipfix(project, "check", entry=False)
    assert asked and reused(asked) == [], asked
    asked.clear()
    second = amp_clipfix(project, "check", entry=False)
    assert second == first and b"optim.py:5:51: ACF002" in second.stdout
    assert asked and computed(asked) == [], asked
