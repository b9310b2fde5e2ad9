"""The report does not depend on Python's hash seed, even where the evaluator's budget runs out
(issue 35): which answers a spent budget cuts follows the order the questions are asked in, so
an order taken from a set or a dict of strings would make `check` print other bytes in another
process. Each run is a fresh interpreter with its own `PYTHONHASHSEED` and a small budget."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Programs that make the evaluator follow values through callers, containers, closures and
# configs; side by side in one project, the questions of each spend the budget of the others.
PROGRAMS = (
    "shape_callable_object_backward_clip_review",
    "shape_closure_backward_clip_unscale",
    "shape_containers_callbacks_factory_plus",
    "shape_containers_trainer_plugins_concatenated",
    "shape_configs_hydra_python_trainer_fused_unfuse",
    "shape_bound_manual_backward_callable_scaled",
)

# Sets frame.BUDGET in the process that runs the check (one job: the evaluator runs there).
DRIVER = """
import sys
from amp_clipfix.analysis import frame
frame.BUDGET = int(sys.argv[1])
from amp_clipfix.replay import main
sys.argv = ["amp-clipfix", "check", "--no-cache", "--format", "json", "--jobs", "1",
            "--lightning-version", "2.6.6", "."]
main()
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeds")
    for name in PROGRAMS:
        shutil.copytree(FIXTURES / name / "input", root / name.replace("shape_", "p_"))
    return root


def report(project: Path, seed: int, budget: int) -> bytes:
    environment = {**os.environ, "PYTHONHASHSEED": str(seed), "AMP_CLIPFIX_NO_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(budget)],
        cwd=project,
        env=environment,
        capture_output=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr.decode("utf-8", "replace")
    return done.stdout


@pytest.mark.parametrize("budget", [40, 160, 200, 400_000])
def test_the_report_is_the_same_under_every_hash_seed(project: Path, budget: int) -> None:
    assert report(project, 1, budget) == report(project, 2, budget)


def test_the_small_budgets_cut_answers(project: Path) -> None:
    """The budgets above cut at three places (three reports, none the full budget's): the
    seeds are compared where the order of the questions counts."""
    reports = {budget: report(project, 1, budget) for budget in (40, 160, 200, 400_000)}
    assert len(set(reports.values())) == 4
    assert reports[400_000].count(b'"code"') == 10  # what the full budget finds
