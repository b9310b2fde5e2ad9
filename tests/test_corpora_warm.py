"""bench/corpora.py measures a run with its bytecode already compiled, as an installed tool has,
against ruff's median run.

The sweep's bytecode cache is a fresh folder (PYTHONPYCACHEPREFIX); a first run there compiles
every module the tool imports. `measure` is replaced by a recorder: the first run of a command
in a folder costs more, as compiling does, and the report must give the later run's figure.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from corpus import Measurement

BENCH = Path(__file__).resolve().parent.parent / "bench"
COLD, WARM = 0.5, 0.1  # CPU seconds the recorder reports for a first and a later run


def load_corpora():
    spec = importlib.util.spec_from_file_location("bench_corpora", BENCH / "corpora.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class Recorder:
    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []  # (folder name, "amp" or "ruff")

    def __call__(
        self,
        command: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Measurement:
        tool = "amp" if any(Path(part).name == "amp-clipfix" for part in command) else "ruff"
        first = (cwd.name, tool) not in self.runs
        self.runs.append((cwd.name, tool))
        cpu = COLD if first else WARM
        return Measurement(
            tuple(command), 0, '{"findings": []}\n', "", cpu, 1 << 20, cpu_seconds=cpu
        )


@pytest.fixture
def corpora_root(tmp_path: Path) -> Path:
    for name in ("a+one", "b+two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text("x = 1\n")
    return tmp_path


def sweep(corpora_root: Path, monkeypatch: pytest.MonkeyPatch, *flags: str):
    corpora = load_corpora()
    recorder = Recorder()
    monkeypatch.setattr(corpora, "measure", recorder)
    arguments = corpora.parse_arguments(
        ["--root", str(corpora_root), "--ruff-runs", "1", "--small-runs", "0", *flags]
    )
    return corpora.sweep(arguments, {}), recorder


def test_each_corpus_is_measured_on_its_second_run(
    corpora_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, recorder = sweep(corpora_root, monkeypatch)
    assert [(r.name, r.amp.cpu_seconds) for r in rows] == [("a+one", WARM), ("b+two", WARM)]
    assert recorder.runs == [
        ("a+one", "amp"),
        ("a+one", "amp"),
        ("a+one", "ruff"),
        ("b+two", "amp"),
        ("b+two", "amp"),
        ("b+two", "ruff"),
    ]


def test_cold_measures_the_first_run(corpora_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows, recorder = sweep(corpora_root, monkeypatch, "--cold")
    assert [r.amp.cpu_seconds for r in rows] == [COLD, COLD]
    assert [tool for _, tool in recorder.runs] == ["amp", "ruff", "amp", "ruff"]


class RuffTicks(Recorder):
    """ruff's runs cost 0.05, 0.09, 0.04, 0.06, 0.05 s in turn (clock ticks)."""

    CPU = [0.05, 0.09, 0.04, 0.06, 0.05]

    def __call__(self, command, cwd, env=None, *, timeout=None):  # type: ignore[no-untyped-def]
        measured = super().__call__(command, cwd, env, timeout=timeout)
        if self.runs[-1][1] == "amp":
            return measured
        cpu = self.CPU[sum(1 for _, tool in self.runs if tool == "ruff") - 1]
        return Measurement(tuple(command), 0, "", "", cpu, 1 << 20, cpu_seconds=cpu)


def test_ruff_is_the_median_of_its_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a+one").mkdir()
    corpora = load_corpora()
    recorder = RuffTicks()
    monkeypatch.setattr(corpora, "measure", recorder)
    arguments = corpora.parse_arguments(["--root", str(tmp_path), "--small-runs", "0"])
    rows = corpora.sweep(arguments, {})
    assert [tool for _, tool in recorder.runs] == ["amp", "amp", *["ruff"] * 5]
    assert rows[0].ruff.cpu_seconds == 0.05
    assert rows[0].ratio == pytest.approx(WARM / 0.05)
