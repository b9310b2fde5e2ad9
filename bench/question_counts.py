"""What one `check --no-cache --format json` of a folder parses and evaluates, per rule and per
caller question, counted in process (load-independent, unlike times).

- modules parsed: calls of `analysis.summary.summarise` (the evaluator's and the rules' loads);
- evaluations: the evaluator's budgeted evaluations (each `ev` that spends budget);
- caller searches: `CallerIndex.search_callers` calls; the outermost ones are listed with the
  parses and evaluations made inside them (inclusive, nested searches included);
- CPU per rule (`time.process_time` around each rule's `check`: noisy, the counts are not).

`--method-caller-files N` sets `callers.METHOD_CALLER_FILES` (default: as the code has it): with
0, a method's callers are looked for only in files that name its class or a subclass, the
ceiling of what an index of where instances can be would save (not sound: a measurement).

    python bench/question_counts.py /work/corpora/Lightning-AI+pytorch-lightning
    python bench/question_counts.py --method-caller-files 0 /work/corpora/karpathy+nanoGPT
"""

from __future__ import annotations

import argparse
import collections
import importlib
import pkgutil
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from in_process import check_quietly

import amp_clipfix.analysis
from amp_clipfix.analysis import callers, evaluate, summary

COUNTS: collections.Counter[tuple[str, str]] = collections.Counter()
OUTER: collections.Counter[tuple[str, str]] = collections.Counter()
CPU: collections.Counter[str] = collections.Counter()
RULE: list[str] = []
SEARCH: list[str] = []


def count(kind: str) -> None:
    COUNTS[(kind, RULE[-1] if RULE else "-")] += 1
    if SEARCH:
        OUTER[(kind, SEARCH[0])] += 1


def counted(kind: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def inner(*args: Any, **kwargs: Any) -> Any:
        count(kind)
        return function(*args, **kwargs)

    return inner


def patch() -> None:
    for module in pkgutil.iter_modules(amp_clipfix.analysis.__path__):
        importlib.import_module(f"amp_clipfix.analysis.{module.name}")
    original = summary.summarise
    wrapped = counted("parse", original)
    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "summarise", None) is original:
            module.summarise = wrapped  # type: ignore[attr-defined]
    evaluate.settled_ev = counted("eval", evaluate.settled_ev)  # type: ignore[attr-defined]
    search = callers.CallerIndex.search_callers

    def search_callers(self: Any, function: Any, ctx: Any, keep: Any = None) -> Any:
        cls = getattr(ctx.cls, "name", None)
        label = f"{ctx.summary.path.name}:{getattr(function, 'name', '?')}"
        SEARCH.append(f"{label} (class {cls})" if cls else label)
        count("search")
        try:
            return search(self, function, ctx, keep)
        finally:
            SEARCH.pop()

    callers.CallerIndex.search_callers = search_callers  # type: ignore[method-assign]
    from amp_clipfix import rules

    for rule in rules.RULES.values():
        if rule.check is not None:
            object.__setattr__(rule, "check", timed(rule.code, rule.check))


def timed(code: str, check: Callable[[Any], Iterator[Any]]) -> Callable[[Any], list[Any]]:
    def inner(queries: Any) -> list[Any]:
        RULE.append(code)
        start = time.process_time()
        try:
            return list(check(queries))
        finally:
            CPU[code] += time.process_time() - start
            RULE.pop()

    return inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method-caller-files", type=int, default=None)
    parser.add_argument("--top", type=int, default=10, help="outermost caller questions listed")
    parser.add_argument("folder")
    arguments = parser.parse_args()
    if arguments.method_caller_files is not None:
        callers.METHOD_CALLER_FILES = arguments.method_caller_files
    patch()
    check_quietly(arguments.folder)
    total = time.process_time()
    codes = sorted({rule for _, rule in COUNTS} | set(CPU))
    print(f"{'rule':6} {'parsed':>6} {'evals':>6} {'searches':>8} {'CPU s':>6}")
    for code in codes:
        parsed, evals, searches = (COUNTS[(k, code)] for k in ("parse", "eval", "search"))
        print(f"{code:6} {parsed:6d} {evals:6d} {searches:8d} {CPU[code]:6.3f}")
    sums = [sum(n for (k, _), n in COUNTS.items() if k == kind) for kind in ("parse", "eval")]
    rules = sum(CPU.values())
    print(f"all    {sums[0]:6d} {sums[1]:6d}  rules {rules:.3f} s, process {total:.3f} s")
    print("outermost caller questions: parsed, evaluations inside")
    questions = {label for _, label in OUTER}
    ranked = sorted(questions, key=lambda q: (-OUTER[("parse", q)], -OUTER[("eval", q)], q))
    for label in ranked[: arguments.top]:
        print(f"  {OUTER[('parse', label)]:4d} {OUTER[('eval', label)]:6d}  {label}")


if __name__ == "__main__":
    main()
