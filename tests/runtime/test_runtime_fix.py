"""Real training programs fail before amp-clipfix and train after it (fixtures/runtime/<case>/).

Each case is a small CPU program that raises one of Lightning's two clipping errors. For every
strategy its case.json lists, the test copies the project, checks the failure, applies the fix
with the CLI and runs the program again. With AMP_CLIPFIX_EXPECT_CLIPPING=1 the programs also
assert that their gradients really were clipped; the guard fix skips clipping, so it is run
without that variable and must warn exactly once instead. Every program prints the largest
gradient norm its optimizer stepped with; after the guard that norm stays above the threshold,
which shows that the programs' clipping check has teeth: bf16 and unfuse passing it means
"clipped", not merely "trained".

The safe fixes (unscale, unfuse, and auto, which picks one of them) must also keep the numbers:
each program writes its final parameters, its optimizer's `fused` flag and its precision to the
file named by AMP_CLIPFIX_REPORT, and these are compared with a reference run of the same program
with `fused=False` written in (Lightning's own clipping). unscale and auto must keep the fused
optimizer and the precision, and every safe fix must end within 1e-6 of the reference.

Each program pays a few seconds of torch and Lightning import, so the runs of the selected tests
start together in a small thread pool and each test waits for its own results.

A case whose case.json has `"runtime": ["lightning==2.0.9.post0", ...]` runs its program with the
python of that release's nox environment (`nox -t releases`, noxfile.py) and pins that release in
its own project files; amp-clipfix itself always runs from the test interpreter and must read the
pin.

Under pytest-xdist every test of one case goes to the same worker (`xdist_group`, with the
`--dist loadgroup` of pyproject.toml), which runs that case's programs one at a time: the workers
are the parallelism. Without xdist the runs start together in the thread pool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from cases import CASES_DIR, CaseBase, case_specs
from piped import amp_clipfix as piped
from programs import EXPECT_CLIPPING, PROGRAMS, REPORT, Proc, run
from pytest import FixtureRequest, TempPathFactory

STRATEGIES = ("bf16", "unfuse", "guard", "unscale", "auto")
SAFE = ("unfuse", "unscale", "auto")  # keep numerics: compared with the fused=False reference
KEEP_FUSED = ("unscale", "auto")  # auto picks unscale wherever it applies
PARAM_TOLERANCE = 1e-6
SKIP_WARNING = "amp-clipfix: gradient clipping skipped"
CLIP = 1.0  # every program clips at 1.0
STEPPED_NORM = re.compile(r"max grad norm at optimizer step: (\S+)")


@dataclass(frozen=True)
class Case(CaseBase):
    """One runtime fixture: the project, its entry point, the error it raises, the fixes."""

    error: str
    strategies: tuple[str, ...]
    unscale_refused: str | None = None  # why the safe fixes cannot keep the fused kernel here
    requires: tuple[str, ...] = ()  # modules the program imports beyond torch and Lightning
    # Text edits the fused=False reference also needs ([old, new]): Fabric's own clip keeps
    # error_if_nonfinite=True and would raise on the overflow steps the fixed program survives.
    reference_edits: tuple[tuple[str, str], ...] = ()


def load_cases() -> list[Case]:
    """Every failing program of fixtures/runtime/<case>/case.json, in name order."""
    return [
        Case(
            **common,
            error=data["error"],
            strategies=tuple(data["strategies"]),
            unscale_refused=data.get("unscale_refused"),
            requires=tuple(data.get("requires", ())),
            reference_edits=tuple(tuple(pair) for pair in data.get("reference_edits", ())),
        )
        for common, data in case_specs(None)
    ]


CASES = load_cases()
# Under pytest-xdist a case's tests share one worker, which then runs each of its programs once.
ONE_WORKER = {c.name: pytest.mark.xdist_group(f"runtime-{c}") for c in CASES}
CASE_PARAMS = [pytest.param(c, id=str(c), marks=ONE_WORKER[c.name]) for c in CASES]
FIX_PAIRS = [
    pytest.param(c, s, id=f"{c}-{s}", marks=ONE_WORKER[c.name]) for c in CASES for s in c.strategies
]


def copy_project(case: Case, workdir: Path) -> Path:
    """A private copy of the case's project: apply rewrites files in place."""
    target = workdir / "project"
    shutil.copytree(case.project, target)
    return target


def run_program(
    case: Case, project: Path, expect_clipping: bool = False, report: Path | None = None
) -> Proc:
    """Run the case's entry point from inside the project, as its author would."""
    env = {EXPECT_CLIPPING: "1"} if expect_clipping else {}
    if report is not None:
        env[REPORT] = str(report)
    return PROGRAMS.run(case.python, [case.entry], cwd=project, env=env)


# tests/piped.py swaps sys.argv, sys.stdout, sys.stderr and the current folder: one CLI run at a
# time, while the programs of the other threads run in processes of their own.
IN_PROCESS = threading.Lock()


def amp_clipfix(*args: str, cwd: Path) -> Proc:
    """`amp-clipfix ARGS` from `cwd`, run in this process as its console entry point runs it
    (tests/piped.py; the CLI's own process is tested in tests/test_cli.py and tests/test_exit.py):
    what it finds and writes is the subject here, and the programs it fixes run on their own."""
    with IN_PROCESS:
        done = piped(cwd, *args)
    output = (stream.decode("utf-8", "replace") for stream in (done.stdout, done.stderr))
    return Proc(f"amp-clipfix {' '.join(args)} (in-process)", done.code, *output)


@dataclass(frozen=True)
class FixRun:
    """The apply step and the run of the fixed program for one (case, strategy), with what the
    program reported (parameters, fused flag, precision) when it ran to the end."""

    apply: Proc
    after: Proc | None = None
    report: dict | None = None
    project: Path | None = None


def read_report(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def fix_and_run(case: Case, strategy: str, workdir: Path) -> FixRun:
    """Apply one strategy to a fresh copy and run the result; the guard cannot promise clipping."""
    project = copy_project(case, workdir)
    applied = amp_clipfix("apply", "--yes", "--strategy", strategy, str(project), cwd=workdir)
    if applied.returncode != 0:
        return FixRun(applied)
    report = workdir / "report.json"
    after = run_program(case, project, expect_clipping=strategy != "guard", report=report)
    return FixRun(applied, after, read_report(report), project)


def unfused_copy(case: Case, workdir: Path) -> Path:
    """The project with every `fused=True` (`fused: true` in YAML) written as False."""
    project = copy_project(case, workdir)
    flipped = 0
    for path in sorted(project.rglob("*")):
        if path.suffix not in (".py", ".yaml", ".yml"):
            continue
        text = path.read_text(encoding="utf-8")
        new = text.replace("fused=True", "fused=False").replace("fused: true", "fused: false")
        flipped += new != text
        for old, replacement in case.reference_edits:
            new = new.replace(old, replacement)
        path.write_text(new, encoding="utf-8")
    assert flipped, f"{case}: no fused=True to turn off for the reference run"
    return project


def reference_run(case: Case, workdir: Path) -> FixRun:
    """The program with fused=False: Lightning clips it itself, the numbers a fix must keep."""
    project = unfused_copy(case, workdir)
    report = workdir / "report.json"
    after = run_program(case, project, expect_clipping=True, report=report)
    return FixRun(Proc("(no apply: fused=False written in)", 0, "", ""), after, read_report(report))


def stepped_norm(program: Proc) -> float:
    """The largest gradient norm the program's optimizer stepped with, as it printed it."""
    found = STEPPED_NORM.search(program.stdout)
    assert found, f"the program should print its stepped gradient norm\n{program}"
    return float(found.group(1))


def failing_run(case: Case, workdir: Path) -> Proc:
    """The unfixed program, run once per case and shared by all its strategies."""
    return run_program(case, copy_project(case, workdir))


def check_run(case: Case, workdir: Path) -> Proc:
    """`amp-clipfix check` on an unfixed copy."""
    return amp_clipfix("check", str(copy_project(case, workdir)), cwd=workdir)


class Runs:
    """Starts program runs in a thread pool, at most once each, and hands out their futures."""

    def __init__(self, tmp: TempPathFactory, workers: int) -> None:
        self._tmp = tmp
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="runtime")
        self._before: dict[str, Future[Proc]] = {}
        self._checked: dict[str, Future[Proc]] = {}
        self._fixed: dict[tuple[str, str], Future[FixRun]] = {}
        self._reference: dict[str, Future[FixRun]] = {}

    def before(self, case: Case) -> Future[Proc]:
        if case.name not in self._before:
            workdir = self._tmp.mktemp(f"{case.name}-before")
            self._before[case.name] = self._pool.submit(failing_run, case, workdir)
        return self._before[case.name]

    def checked(self, case: Case) -> Future[Proc]:
        if case.name not in self._checked:
            workdir = self._tmp.mktemp(f"{case.name}-check")
            self._checked[case.name] = self._pool.submit(check_run, case, workdir)
        return self._checked[case.name]

    def fixed(self, case: Case, strategy: str) -> Future[FixRun]:
        key = (case.name, strategy)
        if key not in self._fixed:
            workdir = self._tmp.mktemp(f"{case.name}-{strategy}")
            self._fixed[key] = self._pool.submit(fix_and_run, case, strategy, workdir)
        return self._fixed[key]

    def reference(self, case: Case) -> Future[FixRun]:
        if case.name not in self._reference:
            workdir = self._tmp.mktemp(f"{case.name}-reference")
            self._reference[case.name] = self._pool.submit(reference_run, case, workdir)
        return self._reference[case.name]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def worker_count() -> int:
    """One program per core (they are CPU-bound), capped to keep memory modest."""
    if "AMP_CLIPFIX_TEST_JOBS" in os.environ:
        return max(1, int(os.environ["AMP_CLIPFIX_TEST_JOBS"]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cores or 1))


@pytest.fixture(scope="module", autouse=True)
def runs(request: FixtureRequest, tmp_path_factory: TempPathFactory) -> Iterator[Runs]:
    """Queue the runs of every selected test of this module now, in test order, so they overlap.
    An xdist worker does not know which tests it will get: it runs each program when a test first
    asks for it, one at a time, beside the other workers."""
    xdist_worker = "PYTEST_XDIST_WORKER" in os.environ
    runs = Runs(tmp_path_factory, 1 if xdist_worker else worker_count())
    for item in [] if xdist_worker else request.session.items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if not params or item.module is not request.module:
            continue
        if not Path(params["case"].python).exists():  # the test fails on that, not the run
            continue
        if item.originalname == test_check_reports_the_unfixed_program.__name__:
            runs.checked(params["case"])
        if item.originalname == test_fix_makes_the_program_train.__name__:
            runs.before(params["case"])
        if "strategy" in params:
            runs.fixed(params["case"], params["strategy"])
            if params["strategy"] in SAFE:
                runs.reference(params["case"])
    yield runs
    runs.close()


def test_cases_are_well_formed() -> None:
    """The walk found the cases, and each one is a runnable project amp-clipfix can be aimed at."""
    assert len(CASES) >= 8, f"expected the runtime fixtures under {CASES_DIR}"
    for case in CASES:
        assert (case.project / case.entry).is_file(), case
        pyproject = case.project / "pyproject.toml"
        assert not pyproject.exists() or "[tool.amp-clipfix]" not in pyproject.read_text(), case
        assert case.error, case
        assert case.strategies and set(case.strategies) <= set(STRATEGIES), case
        if case.unscale_refused is None:
            assert {"unscale", "auto"} <= set(case.strategies), f"{case}: safe fixes unproven"
        else:  # the check of the refusal itself is a fixture's job (fixtures/<case>)
            assert not {"unscale", "auto"} & set(case.strategies), case


def test_a_forked_program_runs_as_python_runs_it(tmp_path: Path) -> None:
    """The fork server changes the cost of a run, not what a run shows: the same exit code,
    output and error as `python <entry>` in a fresh interpreter (an unfixed and a fixed run)."""
    case = next(c for c in CASES if not c.runtime and "unfuse" in c.strategies)
    unfixed = copy_project(case, tmp_path / "unfixed")
    fixed = unfused_copy(case, tmp_path / "fixed")
    fresh = {}
    for project in (unfixed, fixed):
        env = {EXPECT_CLIPPING: "1"}
        fresh[project] = run([sys.executable, case.entry], cwd=project, env=env)
        forked = PROGRAMS.run(sys.executable, [case.entry], cwd=project, env=env)
        shown = fresh[project]
        assert forked.returncode == shown.returncode, f"{shown}\n\n{forked}"
        assert forked.stdout == shown.stdout, f"{shown}\n\n{forked}"
        assert forked.stderr.strip().splitlines()[-1:] == shown.stderr.strip().splitlines()[-1:]
    assert case.error in fresh[unfixed].stderr, fresh[unfixed]
    assert fresh[fixed].returncode == 0 and "TRAINED OK" in fresh[fixed].stdout, fresh[fixed]


def test_a_missing_release_environment_fails(require_release) -> None:
    """Fail, never skip: a release no environment was made for names the command that makes it."""
    with pytest.raises(pytest.fail.Exception, match=r"is missing; .* `nox -t releases`"):
        require_release(("lightning==0.0.1",))
    require_release(())  # this interpreter's cases need none


@pytest.mark.parametrize("case", CASES, ids=str)
def test_required_modules_are_installed(case: Case) -> None:
    """Fail, never skip: a case whose program needs more than torch and Lightning says what."""
    missing = [name for name in case.requires if importlib.util.find_spec(name) is None]
    assert not missing, f"{case} needs {missing}: pip install -e . --group test"


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_check_reports_the_unfixed_program(case: Case, runs: Runs, require_release) -> None:
    """`amp-clipfix check` finds what makes the program fail, on the release the project pins."""
    require_release(case.runtime)
    checked = runs.checked(case).result()
    assert checked.returncode == 1, f"check should report findings\n{checked}"
    if case.runtime:  # read from the project's own pins, not from the Lightning installed here
        assumed = checked.stdout.rsplit("; assumed ", 1)[-1]
        line = case.runtime[0].partition("==")[2][:3]  # "1.9", "2.0", "2.4"
        assert line in assumed and " from project/" in assumed, checked


@pytest.mark.parametrize(("case", "strategy"), FIX_PAIRS)
def test_fix_makes_the_program_train(
    case: Case, strategy: str, runs: Runs, require_release
) -> None:
    """Fails with Lightning's error before; after `apply --strategy S` it trains (and clips)."""
    require_release(case.runtime)
    before = runs.before(case).result()
    assert before.returncode != 0, f"the unfixed program should fail\n{before}"
    assert case.error in before.stderr, f"expected {case.error!r} in stderr\n{before}"

    fixed = runs.fixed(case, strategy).result()
    assert fixed.apply.returncode == 0, f"apply should fix everything\n{fixed.apply}"
    after = fixed.after
    assert after is not None
    assert after.returncode == 0, f"the fixed program should train\n{after}\n\n{fixed.apply}"
    assert "TRAINED OK" in after.stdout, after
    warnings = after.stderr.count(SKIP_WARNING)
    if strategy == "guard":
        assert warnings == 1, f"the guard must warn exactly once, not {warnings} times\n{after}"
        assert stepped_norm(after) > 2 * CLIP, f"the guard skips clipping: norms stay high\n{after}"
    else:
        assert warnings == 0, f"{strategy} must not skip clipping\n{after}"
        assert stepped_norm(after) <= CLIP + 1e-3, after


def max_difference(left: list[float], right: list[float]) -> float:
    assert len(left) == len(right), "the two runs trained different parameters"
    return max(abs(a - b) for a, b in zip(left, right))


SAFE_PAIRS = [p for p in FIX_PAIRS if p.values[1] in SAFE]


@pytest.mark.parametrize(("case", "strategy"), SAFE_PAIRS)
def test_safe_fix_keeps_the_numbers(case: Case, strategy: str, runs: Runs, require_release) -> None:
    """After a safe fix the parameters match Lightning's own clipping with fused=False within
    1e-6 (on the release the case pins, in its own venv); unscale (and auto) also keep the fused
    optimizer and the precision."""
    require_release(case.runtime)
    reference = runs.reference(case).result()
    assert reference.after is not None
    assert reference.after.returncode == 0, (
        f"the fused=False reference should train\n{reference.after}"
    )
    fixed = runs.fixed(case, strategy).result()
    assert fixed.report is not None, f"the fixed program wrote no report\n{fixed.after}"
    assert reference.report is not None

    assert fixed.report["precision"] == reference.report["precision"]
    assert fixed.report["scaler"] == reference.report["scaler"]
    if strategy in KEEP_FUSED:
        assert fixed.report["fused"] is True, "the fix must keep the fused optimizer"
        assert reference.report["fused"] is False
    difference = max_difference(fixed.report["params"], reference.report["params"])
    print(f"{case}-{strategy}: max parameter difference to fused=False: {difference:.3g}")
    assert difference <= PARAM_TOLERANCE
