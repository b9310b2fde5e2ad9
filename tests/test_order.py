"""Findings never depend on order: of the paths given, of the workers, or of the cache.

One folder holds several fixtures' projects side by side; `check --format json` must give the
same bytes with its paths in two orders, with one worker and two, the cache cold and warm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SRC = Path(__file__).resolve().parent.parent / "src"

# Projects whose sites meet across files, through spreads, subclasses, configs and fits: where
# the question asked first could decide what a site says.
CASES = (
    "trainer_params_spread_review",
    "fabric_kwargs_spread_precision_review",
    "trainer_two_files_unscale",
    "trainer_subclass_super_init_unfuse",
    "trainer_subclass_kwargs_setdefault_unscale",
    "trainer_fit_links_only_fitted_class",
    "trainer_unknown_fit_review_unfuse",
    "fabric_and_trainer_two_findings_in_one_project",
    "fabric_factory_other_module_unfuse",
    "yaml_cli_trainer_and_optimizer_unfuse",
    "trainer_plugin_variable_in_list_module_clip_unscale",
    "fabric_launch_arguments_reach_function_after_fabric",
)


def check(folder: Path, paths: list[str], jobs: int) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--format", "json"]
        + ["--lightning-version", "2.6.6", "-j", str(jobs), *paths],
        cwd=folder,
        env=env,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr.decode()
    return result.stdout


def test_json_findings_are_the_same_bytes_in_any_order_with_any_workers_and_cache(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "projects"
    for case in CASES:
        shutil.copytree(FIXTURES / case / "input", folder / case)
    forward = list(CASES)
    backward = forward[::-1]

    cold = check(folder, forward, jobs=1)  # the cache is cold: nothing is stored yet
    assert b'"findings": [' in cold and cold.count(b'"code": "ACF') >= len(CASES)
    runs = {
        "backward, 1 worker, warm cache": check(folder, backward, jobs=1),
        "forward, 2 workers, warm cache": check(folder, forward, jobs=2),
        "backward, 2 workers, warm cache": check(folder, backward, jobs=2),
    }
    for cache in folder.rglob(".amp_clipfix_cache"):
        shutil.rmtree(cache)
    runs["backward, 2 workers, cold cache"] = check(folder, backward, jobs=2)
    runs["forward, 1 worker, warm cache"] = check(folder, forward, jobs=1)
    for name, output in runs.items():
        assert output == cold, name
