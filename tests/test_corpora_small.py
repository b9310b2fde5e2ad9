"""bench/corpora.py times a small corpus by runs of both commands in turn, each alone.

On a corpus of a few dozen files ruff takes ~10 ms: one run's figure moves by a fifth with the
load, and GNU time's own ~1.5 ms (counted into every `measure`) is a sixth of it. A small corpus's
CPU figures are the medians of `--small-runs` runs of each command, alternating, measured by
`command_cpu` (no GNU time); a larger one keeps the single measured run and ruff's median.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from test_corpora_warm import WARM, Recorder, load_corpora

AMP_CPU = [0.090, 0.300, 0.080, 0.085, 0.095]  # one run slowed by the load
RUFF_CPU = [0.012, 0.011, 0.030, 0.010, 0.013]


class Alone:
    """`command_cpu`'s stand-in: the next figure of each command's list, and the order asked."""

    def __init__(self) -> None:
        self.order: list[str] = []

    def __call__(
        self, command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
    ) -> float:
        tool = "amp" if any(Path(part).name == "amp-clipfix" for part in command) else "ruff"
        self.order.append(tool)
        figures = AMP_CPU if tool == "amp" else RUFF_CPU
        return figures[(self.order.count(tool) - 1) % len(figures)]


def corpus(root: Path, name: str, files: int) -> None:
    (root / name).mkdir()
    for index in range(files):
        (root / name / f"m{index}.py").write_text("x = 1\n")


def sweep(root: Path, monkeypatch: pytest.MonkeyPatch, *flags: str):
    corpora = load_corpora()
    alone = Alone()
    monkeypatch.setattr(corpora, "measure", Recorder())
    monkeypatch.setattr(corpora, "command_cpu", alone)
    arguments = corpora.parse_arguments(["--root", str(root), "--ruff-runs", "1", *flags])
    return corpora, corpora.sweep(arguments, {}), alone


def test_a_small_corpus_takes_the_medians_of_runs_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(tmp_path, "a+small", 3)
    corpora, rows, alone = sweep(tmp_path, monkeypatch, "--small-runs", "5")
    assert alone.order == ["amp", "ruff"] * 5
    assert rows[0].amp.cpu_seconds == 0.090
    assert rows[0].ruff.cpu_seconds == 0.012
    assert rows[0].ratio == pytest.approx(7.5)
    assert rows[0].paired == 5
    table = corpora.report(rows, "1.0")
    assert "| a+small (small) | 3 | 0.090 | 0.012 | 7.5x |" in table[2]
    assert table[-1] == "(small): CPU figures are medians of 5 runs of each, in turn."


def test_a_corpus_above_the_size_keeps_its_measured_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(tmp_path, "b+large", 3)
    corpora, rows, alone = sweep(tmp_path, monkeypatch, "--small-files", "2")
    assert alone.order == []
    assert rows[0].amp.cpu_seconds == WARM
    assert rows[0].paired == 0
    assert not any("(small)" in line for line in corpora.report(rows, "1.0"))


def test_the_small_corpus_keeps_the_measured_run_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(tmp_path, "c+small", 1)
    _, rows, _ = sweep(tmp_path, monkeypatch)
    assert rows[0].amp.stdout == '{"findings": []}\n'
    assert rows[0].amp.peak_bytes == 1 << 20
    assert rows[0].paired == 9


def test_command_cpu_counts_the_command_alone(tmp_path: Path) -> None:
    import sys

    from corpus import command_cpu

    busy = "import time\nend = time.process_time() + 0.05\nwhile time.process_time() < end: pass"
    assert 0.05 <= command_cpu([sys.executable, "-c", busy], tmp_path) < 5
