"""How each memoised query of a cold `check .` conducts itself on the evaluator (issue 35's
after-an-edit targets): what a certificate that makes `Queries.catch_up` unnecessary would have
to check and put back, counted per computed query (load-independent counts, no times).

    python bench/query_conduct.py /work/corpora/NVIDIA+NeMo [--json]

The tree is copied to a scratch folder and a cold `check .` (with the cache, so the queries
run) is made in a child process whose evaluator and rule facts are watched. Per computed
query (the text tests `may_name`, `may_import`, `may_hold` never touch the evaluator: left out):

- `cycles`: `EvaluatorBase.cycle` answered yes (an evaluation met again while it runs);
- `kept`: values `leave` kept for the question only (a hard cut or a cycle below them), and
  `heads`: values memoised as a cycle's head (their value depends on where it was entered);
- `cuts`: hard cuts made (every increase of `cuts`, counted even where cycles.py or passon.py
  later set it back), and `budget`: evaluations spent (net of what cycles.py gives back);
- `probes`: `has_summary` asked (files sorted or work bounded by what is already parsed),
  and `made`: summaries the query made (what a certificate would put back as `promised`);
- `loaded`, `done`, `questions` (`untested`: without a noted text test): what the rule facts
  (`facts.LazyFiles`) gained, which the later searches and the settle read; `fits`: the rule
  computed `ProjectFacts.fits` (later rules read that list), `scoped`: `modules_of` took the
  fits of one scope because no rule had listed every fit yet.

`clean` is yes when cycles, kept, heads and cuts are all 0: a computation whose memos are
functions of their keys alone. This tool only measures: nothing in src/ reads these counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

COUNTS = ("cycles", "kept", "heads", "cuts", "budget", "probes", "made")
FACTS = ("loaded", "done", "questions", "untested", "fits", "scoped")


def child(tree: Path, flags: Sequence[str], report: Path) -> None:
    """In the child process: one `check FLAGS .` of `tree`, each query's conduct counted."""
    from amp_clipfix.analysis import facts, frame, queries

    counts = dict.fromkeys(COUNTS + FACTS, 0)
    lazies: list[Any] = []
    evaluators: list[Any] = []

    def counted_cuts_get(self: Any) -> int:
        return self.__dict__.get("_counted_cuts", 0)

    def counted_cuts_set(self: Any, value: int) -> None:
        before = self.__dict__.get("_counted_cuts", 0)
        counts["cuts"] += max(0, value - before)
        self.__dict__["_counted_cuts"] = value

    frame.EvaluatorBase.cuts = property(counted_cuts_get, counted_cuts_set)  # type: ignore[assignment]
    cycle, leave, has_summary = (
        frame.EvaluatorBase.cycle,
        frame.EvaluatorBase.leave,
        frame.EvaluatorBase.has_summary,
    )
    base_init = frame.EvaluatorBase.__init__

    def watched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        base_init(self, *args, **kwargs)
        evaluators.append(self)

    def watched_cycle(self: Any, kind: str, key: object) -> bool:
        met = cycle(self, kind, key)
        counts["cycles"] += met
        return met

    def watched_leave(
        self: Any, entered: Any, cache: Any, kind: str, key: Any, values: Any
    ) -> None:
        heads = len(self.heads)
        leave(self, entered, cache, kind, key, values)
        if values is not None and cache.get(key) is not values:
            counts["kept"] += 1
        counts["heads"] += len(self.heads) - heads

    def watched_has_summary(self: Any, path: Path) -> bool:
        counts["probes"] += 1
        return has_summary(self, path)

    frame.EvaluatorBase.__init__ = watched_init  # type: ignore[method-assign]
    frame.EvaluatorBase.cycle = watched_cycle  # type: ignore[method-assign]
    frame.EvaluatorBase.leave = watched_leave  # type: ignore[method-assign]
    frame.EvaluatorBase.has_summary = watched_has_summary  # type: ignore[method-assign]

    lazy_init, fits, modules_of = (
        facts.LazyFiles.__init__,
        facts.ProjectFacts.fits,
        facts.ProjectFacts.modules_of,
    )

    def watched_lazy(self: Any, *args: Any, **kwargs: Any) -> None:
        lazy_init(self, *args, **kwargs)
        lazies.append(self)

    def watched_fits(self: Any) -> Any:
        counts["fits"] += self._fits is None
        return fits(self)

    def watched_modules_of(self: Any, call: Any, file: Any = None) -> Any:
        counts["scoped"] += self._fits is None and file is not None
        return modules_of(self, call, file)

    facts.LazyFiles.__init__ = watched_lazy  # type: ignore[method-assign]
    facts.ProjectFacts.fits = watched_fits  # type: ignore[method-assign]
    facts.ProjectFacts.modules_of = watched_modules_of  # type: ignore[method-assign]

    def state() -> dict[str, int]:
        now = dict(counts)
        now["budget"] = sum(frame.BUDGET - e.budget for e in evaluators)
        now["made"] = sum(len(e.summaries) for e in evaluators)
        now["loaded"] = sum(len(lazy.loaded) for lazy in lazies)
        now["done"] = sum(len(lazy.done) for lazy in lazies)
        asked = [q for lazy in lazies for q in lazy.questions]
        now["questions"] = len(asked)
        untested = [w for _, w in asked if w is not None and not hasattr(w, "condition")]
        now["untested"] = len(untested)
        return now

    rows: list[dict[str, object]] = []
    run = queries.Queries.run

    def watched_run(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("pure"):
            return run(self, name, *args, **kwargs)
        before, reused = state(), len(self.reused)
        try:
            return run(self, name, *args, **kwargs)
        finally:
            after = state()
            row: dict[str, object] = {"query": name, "reused": len(self.reused) > reused}
            row.update({key: after[key] - before[key] for key in COUNTS + FACTS})
            rows.append(row)

    queries.Queries.run = watched_run  # type: ignore[method-assign]
    from amp_clipfix import replay

    os.chdir(tree)
    sys.argv = ["amp-clipfix", "check", *flags, "."]
    with open(os.devnull, "w", encoding="utf-8") as printed:
        stdout, sys.stdout = sys.stdout, printed
        try:
            replay._main()
        except SystemExit:
            pass
        finally:
            sys.stdout = stdout
    report.write_text(json.dumps(rows), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--json", action="store_true", help="`check --format json .`")
    arguments = parser.parse_args(argv)
    flags = ["--format", "json"] if arguments.json else []
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-query-conduct-") as name:
        scratch = Path(name)
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(scratch / "pycache"), NO_COLOR="1")
        tree = scratch / arguments.corpus.name
        shutil.copytree(arguments.corpus, tree, symlinks=True)
        shutil.rmtree(tree / ".amp_clipfix_cache", ignore_errors=True)
        report = scratch / "report.json"
        command = [sys.executable, __file__, "--child", str(tree), str(report), *flags]
        subprocess.run(command, env=env, check=True, stderr=subprocess.DEVNULL)
        rows = json.loads(report.read_text(encoding="utf-8"))
    columns = ("query", "clean", *COUNTS, *FACTS)
    print("| " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * (len(columns) - 2))
    for row in rows:
        clean = all(row[key] == 0 for key in ("cycles", "kept", "heads", "cuts"))
        cells = [str(row["query"]), "yes" if clean else "no"]
        cells += [str(row[key]) for key in COUNTS + FACTS]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[4:], Path(sys.argv[3]))
    else:
        sys.exit(main())
