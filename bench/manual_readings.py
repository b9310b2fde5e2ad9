"""What ACF005's readings cost and what they meet, counted in process (load-independent, unlike
times): per reading (a function `manual_reads` gives, read by `order.events` with its helpers),
the evaluations made inside it, its events and whether it meets a clip (no clip: the reading
cannot give a finding); then the calls whose classification cost most (`module_call`, the
first question the classifier asks of every call: its callee's value, which helper entry then
reuses from the evaluator's memo); the readings by their class's standing (a LightningModule
that may optimize by hand, a class the evaluator does not find to be one, no class) and ACF005's
whole `check` CPU.

`--read manual-modules` / `--read none` leave readings out (a measurement, not sound: a ceiling
of what a gate on the readings could save; ACF005's parses and `manual_reads` stay).

    python bench/manual_readings.py /work/corpora/Lightning-AI+pytorch-lightning
    python bench/manual_readings.py --read none /work/corpora/Lightning-AI+pytorch-lightning
"""

from __future__ import annotations

import argparse
import ast
import collections
import time
from typing import Any

from in_process import check_quietly

from amp_clipfix.analysis import evaluate
from amp_clipfix.analysis.order import EventKind
from amp_clipfix.rules import acf005

EVALS = [0]
READINGS: list[tuple[int, float, int, bool, str]] = []
CALLS: collections.Counter[str] = collections.Counter()
STANDING: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0, 0.0])
CHECK = [0.0]


def standing(facts: Any, file: Any, function: Any) -> str:
    owner = None if isinstance(function, ast.Module) else facts.class_of(file, function)
    if owner is None:
        return "no class"
    if facts.is_lightning_module(owner) and facts.manual_optimization(owner) is not False:
        return "manual module"
    return "other class"


def patch(read_only: str) -> None:
    settled = evaluate.settled_ev

    def counted_ev(*args: Any, **kwargs: Any) -> Any:
        EVALS[0] += 1
        return settled(*args, **kwargs)

    evaluate.settled_ev = counted_ev  # type: ignore[attr-defined]
    events = acf005.events

    def read(facts: Any, file: Any, function: Any, classify: Any, *a: Any, **k: Any) -> Any:
        before, start = EVALS[0], time.process_time()
        order = events(facts, file, function, classify, *a, **k)
        clip = any(event.kind is EventKind.CLIP for event in order)
        label = f"{file.path.name}:{getattr(function, 'name', '<module>')}"
        cpu = time.process_time() - start
        READINGS.append((EVALS[0] - before, cpu, len(order), clip, label))
        kind = STANDING[standing(facts, file, function)]
        kind[0], kind[1], kind[2] = kind[0] + 1, kind[1] + EVALS[0] - before, kind[2] + cpu
        return order

    acf005.events = read  # type: ignore[attr-defined]
    reads = acf005.manual_reads

    def kept_reads(facts: Any, file: Any) -> Any:
        for function, owner in reads(facts, file):
            wanted = {"all": True, "none": False}.get(read_only)
            if wanted is None:  # manual-modules
                wanted = standing(facts, file, function) == "manual module"
            if wanted:
                yield function, owner

    acf005.manual_reads = kept_reads  # type: ignore[attr-defined]
    check = acf005.RULE.check

    def timed(queries: Any) -> Any:
        start = time.process_time()
        try:
            yield from check(queries)
        finally:
            CHECK[0] += time.process_time() - start

    object.__setattr__(acf005.RULE, "check", timed)
    module_call = acf005.module_call

    def asked(facts: Any, file: Any, call: ast.Call, attr: str, owner: Any) -> Any:
        before = EVALS[0]
        try:
            return module_call(facts, file, call, attr, owner)
        finally:
            CALLS[f"{file.path.name}:{call.lineno} {ast.unparse(call.func)[:50]}"] += (
                EVALS[0] - before
            )

    acf005.module_call = asked  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--read", choices=("all", "manual-modules", "none"), default="all")
    parser.add_argument("folder")
    arguments = parser.parse_args()
    patch(arguments.read)
    check_quietly(arguments.folder)
    met = [r for r in READINGS if r[3]]
    print(
        f"readings {len(READINGS)}: evaluations {sum(r[0] for r in READINGS)}, "
        f"CPU {sum(r[1] for r in READINGS):.3f} s; meeting a clip {len(met)}: evaluations "
        f"{sum(r[0] for r in met)}, CPU {sum(r[1] for r in met):.3f} s"
    )
    print("costliest readings: evaluations, CPU s, events, clip met")
    for evals, cpu, count, clip, label in sorted(READINGS, reverse=True)[: arguments.top]:
        print(f"  {evals:5d} {cpu:6.3f} {count:3d} {'clip' if clip else '-':4}  {label}")
    print("costliest calls classified (evaluations of module_call)")
    for label, evals in CALLS.most_common(arguments.top):
        print(f"  {evals:5d}  {label}")
    print("readings by their class: readings, evaluations, CPU s")
    for kind, (count, evals, cpu) in sorted(STANDING.items()):
        print(f"  {count:4.0f} {evals:5.0f} {cpu:6.3f}  {kind}")
    print(f"ACF005 check CPU {CHECK[0]:.3f} s (readings: {arguments.read})")


if __name__ == "__main__":
    main()
