"""Issue 35's finer queries (analysis/queries.py, analysis/rules_query.py): one query per
searching rule; answers the evaluator's budget cut are stored and reused exactly as a cold run
gives them; query entries a run does not use are pruned. Every warm run prints the bytes of a
cold `--no-cache` run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import (
    SCALED,
    base_project,
    computed,
    edit_line,
    reused,
    same_as_cold,
    spied_queries,
    write,
)

from amp_clipfix.analysis import frame
from amp_clipfix.analysis.cache import KEPT_QUERIES, is_query_name
from amp_clipfix.cache_layout import version_folder

# A file only ACF012 (deprecated AMP classes) finds anything in: no clip, no fit.
LEGACY = """import torch


def run(x):
    with torch.cuda.amp.autocast():
        return x
"""


asked = pytest.fixture(name="asked")(spied_queries)  # the queries asked, and whether stored


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """test_incremental's project with a fused factory, a file only ACF012 reads, a helper."""
    root = base_project(tmp_path, monkeypatch, "True")
    write(root, "legacy.py", LEGACY)
    write(root, "pkg/helper.py", "def helper(x):\n    return x + 1\n")
    return root


def test_an_edit_only_a_later_rule_read_reuses_the_rules_before(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """legacy.py holds no word of ACF004 .. ACF011: its edit (which drops ACF012's finding
    there, and makes it no candidate of any search) runs ACF012 and the queries after it."""
    first = same_as_cold(project)
    assert b"legacy.py:5:10: ACF012" in first
    asked.clear()
    edit_line("legacy.py", "torch.cuda.amp.autocast()", 'torch.amp.autocast("cuda")')(project)
    after = same_as_cold(project)
    assert b"legacy.py" not in after and b"scaled.py:3:10: ACF012" in after
    # legacy.py was the first file holding ACF012's word (may_hold's witness): asked again,
    # the same answer, so the rules before ACF012 are reused (queries.Queries.computed_pure)
    assert computed(asked) == ["may_hold", "rule ACF012", "settle"], asked  # ACF013: no fsdp
    assert {"trial", "resolve", "rule ACF004", "rule ACF011"} <= set(reused(asked))


def test_a_file_that_starts_holding_a_rules_word_runs_that_rule(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """The other way: legacy.py starts clipping a scaled gradient, so ACF004 (whose words it
    did not hold) has a finding there, found again."""
    same_as_cold(project)
    asked.clear()
    write(project, "legacy.py", LEGACY + "\n\n" + SCALED.replace("import torch\n", ""))
    after = same_as_cold(project)
    assert b"legacy.py:" in after and b": ACF004 " in after.split(b"legacy.py:", 1)[1]
    assert "rule ACF004" in computed(asked)


@pytest.mark.parametrize("budget", [5, 10, 15, 30])
def test_answers_the_budget_cut_are_reused_as_a_cold_run_gives_them(
    project: Path, asked: list[tuple[str, bool]], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """With a run's budget this small the evaluator cuts answers (the report differs from the
    full budget's), and what it cuts depends on the work done before: the trial is reused, so
    the rules after the edit are computed on the evaluator a cold run has there (the trial is
    computed again first), and the bytes are the cold run's."""
    full = amp_clipfix(project, "check", "--no-cache", entry=False).stdout
    monkeypatch.setattr(frame, "BUDGET", budget)
    cut = same_as_cold(project)
    assert cut != full
    asked.clear()
    edit_line(
        "scaled.py", "    torch.nn.utils", "    scaler.unscale_(optimizer)\n    torch.nn.utils"
    )(project)
    same_as_cold(project)
    assert "trial" in reused(asked) and "rule ACF004" in computed(asked)
    asked.clear()
    edit_line("pkg/helper.py", "x + 1", "x + 2")(project)  # read by no query
    same_as_cold(project)
    assert computed(asked) == [], asked


def query_entries(root: Path) -> dict[str, float]:
    """The query and revision entries of the project's cache, by name, with their time."""
    found = {}
    for shard in Path(version_folder(root)).iterdir():
        if shard.is_dir() and not shard.is_symlink():
            for entry in shard.iterdir():
                if is_query_name(entry.name):
                    found[entry.name] = entry.lstat().st_mtime
    return found


def test_query_entries_a_run_does_not_use_are_pruned(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """Each edit writes the queries it computes; the entries no run uses go, but the newest
    KEPT_QUERIES others; the ones the last run used are all there (it replays from them)."""
    amp_clipfix(project, "check", entry=False)
    per_run = len(asked) + 1  # the queries of one run and the files' hashes
    counts = []
    for _ in range(12):  # a line more each time: the sites move, every query is new
        edit_line("pkg/factory.py", "import torch", "import torch  # a line\n")(project)
        amp_clipfix(project, "check", entry=False)
        counts.append(len(query_entries(project)))
    assert 12 * per_run > KEPT_QUERIES + per_run >= max(counts), counts
    asked.clear()
    edit_line("pkg/helper.py", "x + 1", "x + 2")(project)  # read by no query
    same_as_cold(project)  # every query answered from what is kept
    assert asked and computed(asked) == [], asked


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs links")
def test_pruning_never_follows_a_link_nor_removes_what_the_cache_did_not_write(
    project: Path, tmp_path: Path, asked: list[tuple[str, bool]]
) -> None:
    """A link named as a query entry (to a file outside the cache) and a file of that name the
    cache did not seal stay, and what the link leads to is untouched."""
    amp_clipfix(project, "check", entry=False)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    shard = next(p for p in Path(version_folder(project)).iterdir() if p.is_dir())
    link = shard / f"query-{'a' * 64}"
    link.symlink_to(outside)
    foreign = shard / f"query-{'b' * 64}"
    foreign.write_bytes(b"not sealed by this user")
    os.utime(link, (0, 0), follow_symlinks=False)
    os.utime(foreign, (0, 0))
    for _ in range(8):  # enough runs that both are older than the entries kept
        edit_line("pkg/factory.py", "import torch", "import torch  # a line\n")(project)
        amp_clipfix(project, "check", entry=False)
    assert link.is_symlink() and outside.read_bytes() == b"precious"
    assert foreign.read_bytes() == b"not sealed by this user"


def test_a_file_that_starts_naming_a_required_class_runs_the_rules_search(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """Which library classes some file names (a rule is skipped where none names the class
    each of its findings needs: ACF006's Fabric) is a query noted with the first file naming
    each: an edit elsewhere reuses it, a file that starts naming Fabric asks it again."""
    same_as_cold(project)
    asked.clear()
    edit_line("pkg/helper.py", "x + 1", "x + 2")(project)
    same_as_cold(project)
    assert "may_name" in reused(asked)
    asked.clear()
    write(project, "fabric_step.py", FABRIC_STEP)
    after = same_as_cold(project)
    assert "may_name" in computed(asked) and "rule ACF006" in computed(asked)
    assert b"fabric_step.py" in after


FABRIC_STEP = """import torch
from lightning.fabric import Fabric

fabric = Fabric(precision="16-mixed")


def step(model, optimizer, loss):
    fabric.backward(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""
