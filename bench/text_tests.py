"""The text tests `mme3` rewrote, timed against the `\\b` forms they replace over each corpus's
Python files (CPU ms, best of `--runs`, in one process: the same moment), and the matches
compared (they must be equal).

- USES_LIGHTNING: project_collect's scan for a file that uses Lightning, stopped at the first
  hit as the tool stops (a project that uses none scans every file);
- STAR_IMPORT: clip_tail's `import *` test of every file;
- defines: reach's `def name` test of every file for one name (`step`).

    python bench/text_tests.py /work/corpora/*
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis import clip_tail, project_collect, reach

USES = re.compile(project_collect.USES_LIGHTNING, re.MULTILINE)
OLD_STAR = re.compile(rb"\bimport\s+\*")
OLD_DEFINES = re.compile(rb"\bdef\s+step\b")


def first_hit(texts: list[bytes], test: Callable[[bytes], bool]) -> int:
    return next((index for index, text in enumerate(texts) if test(text)), -1)


def lightning_old(texts: list[bytes]) -> object:
    return first_hit(texts, lambda data: USES.search(data) is not None)


def lightning_new(texts: list[bytes]) -> object:
    return first_hit(texts, project_collect.uses_lightning)


TESTS: dict[str, tuple[Callable[[list[bytes]], object], Callable[[list[bytes]], object]]] = {
    "USES_LIGHTNING": (lightning_old, lightning_new),
    "STAR_IMPORT": (
        lambda texts: [OLD_STAR.search(t) is not None for t in texts],
        lambda texts: [clip_tail.STAR_IMPORT.search(t) is not None for t in texts],
    ),
    "defines": (
        lambda texts: [OLD_DEFINES.search(t) is not None for t in texts],
        lambda texts: [reach.defines("step", t) for t in texts],
    ),
}


def best(function: Callable[[list[bytes]], object], texts: list[bytes], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        function(texts)
        times.append(time.process_time() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("folders", nargs="+", type=Path)
    arguments = parser.parse_args()
    print("| corpus | files | " + " | ".join(f"{name} old / new ms" for name in TESTS) + " |")
    print("|---|---:|" + "---:|" * len(TESTS))
    for folder in arguments.folders:
        texts = [path.read_bytes() for path in sorted(folder.rglob("*.py"))]
        cells = []
        for old, new in TESTS.values():
            assert old(texts) == new(texts)
            cells.append(
                f"{best(old, texts, arguments.runs):.1f} / {best(new, texts, arguments.runs):.1f}"
            )
        print(f"| {folder.name} | {len(texts)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
