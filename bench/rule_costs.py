"""Each rule's CPU in one `check --no-cache --format json` of a folder, in process (the
garbage collector off and no collection after the run, as the command has it), split into its
`ast` parses (modules, and bodies parsed again) and the rest, with the parses counted; then the
time between the rules (`find_findings` less the checks: letting go of bodies, the findings'
order). Noisy under load; the counts are not.

    python bench/rule_costs.py /work/corpora/Lightning-AI+pytorch-lightning
"""

from __future__ import annotations

import argparse
import ast
import collections
import time
from collections.abc import Callable, Iterator
from typing import Any

from in_process import check_quietly

RULE: list[str] = []
PARSE: collections.Counter[str] = collections.Counter()
PARSES: collections.Counter[str] = collections.Counter()
CHECK: collections.Counter[str] = collections.Counter()
FIND: list[float] = []


def patch() -> None:
    from amp_clipfix import rules, run_notes

    run_notes.is_the_command = lambda: True  # as the command: no collection after the run
    parse = ast.parse

    def timed_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return parse(source, *args, **kwargs)
        finally:
            rule = RULE[-1] if RULE else "-"
            PARSE[rule] += time.process_time() - start
            PARSES[rule] += 1

    ast.parse = timed_parse

    def timed(code: str, check: Callable[[Any], Iterator[Any]]) -> Callable[[Any], list[Any]]:
        def inner(queries: Any) -> list[Any]:
            RULE.append(code)
            start = time.process_time()
            try:
                return list(check(queries))
            finally:
                CHECK[code] += time.process_time() - start
                RULE.pop()

        return inner

    for rule in rules.RULES.values():
        if rule.check is not None:
            object.__setattr__(rule, "check", timed(rule.code, rule.check))
    find_findings = rules.find_findings

    def found(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return find_findings(*args, **kwargs)
        finally:
            FIND.append(time.process_time() - start)

    rules.find_findings = found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    arguments = parser.parse_args()
    patch()
    check_quietly(arguments.folder, exits=False)
    total = time.process_time()
    print(f"{'rule':6} {'CPU ms':>7} {'parse ms':>8} {'parses':>6} {'rest ms':>7}")
    for code in sorted(CHECK):
        parse, check = PARSE[code] * 1000, CHECK[code] * 1000
        print(f"{code:6} {check:7.1f} {parse:8.1f} {PARSES[code]:6d} {check - parse:7.1f}")
    checks = sum(CHECK.values())
    print(
        f"find_findings {sum(FIND) * 1000:.1f} ms, of it between the rules "
        f"{(sum(FIND) - checks) * 1000:.1f} ms; the process {total:.3f} s"
    )


if __name__ == "__main__":
    main()
