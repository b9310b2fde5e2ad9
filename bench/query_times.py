"""Where a warm `check` after a one-line edit spends its time, query by query (issue 35's
after-an-edit targets): which memoised queries (analysis/queries.py) are reused or computed,
the CPU of each and of the catch-up before the first computed one, and which queries read the
edited file.

    python bench/query_times.py /work/corpora/NVIDIA+NeMo pkg/mod.py [FILE ...]
    python bench/query_times.py --no-catch-up /work/corpora/NVIDIA+NeMo pkg/mod.py

The tree is copied to a scratch folder. A cold `check .` (`--json`: `check --format json .`)
fills its cache; each query's CPU, `ast.parse` calls (load-independent) and own whole-file
reads are noted there (the files a query reads while it runs, not the cumulative ones its entry
stores), and per run the notebooks whose JSON is parsed (`read_notebook`, load-independent too),
the configs ACF011 scans for an old spelling and the YAML texts composed in its process, and
ACF011's Python candidates computed (`call_findings`) and answered from the earlier entry
(`candidate_answers.Session.put_back`) (ACF011 and config_sites are imported before the clock
starts).
Then, per FILE, from a copy of that cold cache: the line
`_edited_N = 1` before the file's first top-level definition (as bench/after_edit.py: every line
below moves; `--at-end`: at its end), the warm run timed in process (`time.process_time`, so
the figures include no start-up: bench/after_edit.py gives the whole command's), and its output
compared with a `--no-cache` run's: `same` or `DIFFERENT`.

`--no-catch-up` drops the catch-up (`Queries.catch_up`: the reused queries that moved the
evaluator computed again before the first computed one). That is NOT sound (a computed answer
may then differ from a cold run's where a budget, a cycle or an order depends on the work before
it): a measurement of what per-question reuse would at most save, the output still compared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from after_edit import edit  # bench/ is the script's folder


def child(tree: Path, flags: Sequence[str], no_catch_up: bool, report: Path) -> None:
    """In the child process: one `check FLAGS .` of `tree`, each query timed, its parses
    counted (`ast.parse` calls: the summaries, the rules' and the readers' trees)."""
    import ast

    from amp_clipfix.analysis import queries

    rows: list[dict[str, object]] = []
    # the catch-ups' CPU and parses so far (run inside `run`: not the query's own)
    caught: list[float] = [0.0]
    caught_parses: list[int] = [0]
    parses: list[int] = [0]
    run, catch_up, parse = queries.Queries.run, queries.Queries.catch_up, ast.parse

    def counted_parse(*args: Any, **kwargs: Any) -> Any:
        parses[0] += 1
        return parse(*args, **kwargs)

    ast.parse = counted_parse
    from amp_clipfix.sources import notebook

    notebooks: list[int] = [0]  # notebooks' JSON parsed (`read_notebook`: a document made)
    read_notebook = notebook.read_notebook

    def counted_notebook(*args: Any, **kwargs: Any) -> Any:
        notebooks[0] += 1
        return read_notebook(*args, **kwargs)

    notebook.read_notebook = counted_notebook  # type: ignore[assignment]
    from amp_clipfix.analysis import config_sites
    from amp_clipfix.rules import acf011

    # ACF011's configs scanned for an old spelling, and YAML texts composed (load-independent)
    configs: list[int] = [0, 0]
    scan, compose = acf011.may_spell_old_value, config_sites.compose_documents

    def counted_scan(text: str) -> bool:
        configs[0] += 1
        return scan(text)

    def counted_compose(*args: Any, **kwargs: Any) -> Any:
        configs[1] += 1
        return compose(*args, **kwargs)

    acf011.may_spell_old_value = counted_scan  # type: ignore[assignment]
    config_sites.compose_documents = counted_compose  # type: ignore[assignment]
    from amp_clipfix.analysis import candidate_answers

    # ACF011's Python candidates computed and answered from the earlier entry (load-independent)
    candidates: list[int] = [0, 0]
    findings, put_back = acf011.call_findings, candidate_answers.Session.put_back

    def counted_findings(*args: Any, **kwargs: Any) -> Any:
        candidates[0] += 1
        return findings(*args, **kwargs)

    def counted_put_back(*args: Any, **kwargs: Any) -> Any:
        candidates[1] += 1
        return put_back(*args, **kwargs)

    acf011.call_findings = counted_findings  # type: ignore[assignment]
    candidate_answers.Session.put_back = counted_put_back  # type: ignore[method-assign]

    # the files a detached query read (queries.py `detach`: its reads are put back to what
    # they were before it, and the later queries count what it left instead)
    dropped: list[set[str]] = [set()]
    restore = queries.restore

    def kept_restore(reads: Any, held: Any) -> None:
        dropped[0] |= set(reads.files)
        restore(reads, held)

    queries.restore = kept_restore  # type: ignore[assignment]

    def timed_run(self: queries.Queries, name: str, *args: object, **kwargs: object) -> object:
        before, reused = set(self.reads.files), len(self.reused)
        dropped[0] = set()
        started, catching, parsed = time.process_time(), caught[0], parses[0]
        catching_parses = caught_parses[0]
        try:
            return run(self, name, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            rows.append(
                {
                    "query": name,
                    "reused": len(self.reused) > reused,
                    "cpu": time.process_time() - started - (caught[0] - catching),
                    "reads": sorted((set(self.reads.files) | dropped[0]) - before),
                    "parses": parses[0] - parsed - (caught_parses[0] - catching_parses),
                }
            )

    def timed_catch_up(self: queries.Queries) -> None:
        if not self.behind:
            return
        started, behind, parsed = time.process_time(), len(self.behind), parses[0]
        if no_catch_up:
            self.behind = []
        else:
            catch_up(self)
        spent = time.process_time() - started
        caught[0] += spent
        caught_parses[0] += parses[0] - parsed
        rows.append({"query": f"catch-up ({behind})", "cpu": spent, "parses": parses[0] - parsed})

    queries.Queries.run = timed_run  # type: ignore[method-assign]
    queries.Queries.catch_up = timed_catch_up  # type: ignore[method-assign]
    from amp_clipfix import replay

    os.chdir(tree)
    sys.argv = ["amp-clipfix", "check", *flags, "."]
    started, code = time.process_time(), None
    with open(report.with_suffix(".out"), "w", encoding="utf-8") as printed:
        stdout, sys.stdout = sys.stdout, printed
        try:
            replay._main()
        except SystemExit as exit:
            code = exit.code
        finally:
            sys.stdout = stdout
    total = time.process_time() - started
    found = {
        "rows": rows,
        "total": total,
        "exit": code,
        "parses": parses[0],
        "notebooks": notebooks[0],
        "configs": configs,
        "candidates": candidates,
    }
    report.write_text(json.dumps(found), encoding="utf-8")


def measured(
    tree: Path, env: dict[str, str], flags: Sequence[str], no_catch_up: bool, scratch: Path
) -> dict[str, Any]:
    """The child's report: its rows, total CPU, parses, exit code and what it printed."""
    report = scratch / "report.json"
    command = [sys.executable, __file__, "--child", str(tree), str(report), *flags]
    if no_catch_up:
        command.append("--no-catch-up")
    subprocess.run(command, env=env, check=True, stderr=subprocess.DEVNULL)
    found = json.loads(report.read_text(encoding="utf-8"))
    found["output"] = report.with_suffix(".out").read_text(encoding="utf-8")
    return found


def configs(report: dict[str, Any]) -> str:
    scanned, composed = report["configs"]
    computed, reused = report["candidates"]
    return (
        f"{scanned} configs scanned by ACF011, {composed} YAML texts composed in process, "
        f"ACF011's candidates {computed} computed / {reused} reused"
    )


def cold_output(tree: Path, env: dict[str, str], flags: Sequence[str]) -> tuple[str, int]:
    command = [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", *flags, "."]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    return done.stdout, done.returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("files", nargs="+", help="files of the corpus to edit, one at a time")
    parser.add_argument("--pythonpath", help="put this folder first on PYTHONPATH")
    parser.add_argument("--at-end", action="store_true", help="edit at the end (no line moves)")
    parser.add_argument("--no-catch-up", action="store_true", help="a measurement: NOT sound")
    parser.add_argument("--json", action="store_true", help="`check --format json .`")
    arguments = parser.parse_args(argv)
    flags = ["--format", "json"] if arguments.json else []
    different = False
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-query-times-") as name:
        scratch = Path(name)
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(scratch / "pycache"), NO_COLOR="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if arguments.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (arguments.pythonpath, env.get("PYTHONPATH")) if p
            )
        tree = scratch / arguments.corpus.name
        shutil.copytree(arguments.corpus, tree, symlinks=True)
        cache = tree / ".amp_clipfix_cache"
        shutil.rmtree(cache, ignore_errors=True)
        cold = measured(tree, env, flags, False, scratch)
        shutil.copytree(cache, scratch / "cold-cache", symlinks=True)
        print(
            f"cold run: {cold['total']:.2f} s CPU in process, {cold['parses']} parses, "
            f"{cold['notebooks']} notebooks' JSON parsed, {configs(cold)}"
        )
        print("| query | cold CPU s | parses | its own whole-file reads | of them edited here |")
        print("|---|---:|---:|---:|---|")
        for row in cold["rows"]:
            reads = [str(Path(p).relative_to(tree)) for p in row.get("reads", [])]
            edited = [f for f in arguments.files if f in reads]
            print(
                f"| {row['query']} | {row['cpu']:.3f} | {row['parses']} | {len(reads)} "
                f"| {', '.join(edited)} |"
            )
        for serial, name in enumerate(arguments.files):
            shutil.rmtree(cache)
            shutil.copytree(scratch / "cold-cache", cache, symlinks=True)
            original = (tree / name).read_bytes()
            edit(tree / name, arguments.at_end, f"_edited_{serial}")
            warm = measured(tree, env, flags, arguments.no_catch_up, scratch)
            same = (warm["output"], warm["exit"]) == cold_output(tree, env, flags)
            different |= not same
            computed = [r for r in warm["rows"] if not r.get("reused", False)]
            reused = sum(r["cpu"] for r in warm["rows"] if r.get("reused", False))
            print(
                f"\n{name}: warm run {warm['total']:.2f} s CPU in process, {warm['parses']} "
                f"parses, {warm['notebooks']} notebooks' JSON parsed, reused queries "
                f"{reused:.3f} s, {configs(warm)}, {'same' if same else 'DIFFERENT'}"
            )
            for row in computed:
                print(f"  {row['query']:16s} {row['cpu']:.3f} s, {row['parses']} parses")
            (tree / name).write_bytes(original)
    return 1 if different else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        rest = sys.argv[4:]
        flags = [flag for flag in rest if flag != "--no-catch-up"]
        child(Path(sys.argv[2]), flags, "--no-catch-up" in rest, Path(sys.argv[3]))
    else:
        sys.exit(main())
