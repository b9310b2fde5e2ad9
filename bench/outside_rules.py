"""Where one `check --no-cache --format json` of a folder spends its CPU outside the rules'
own searches, measured in process as the command runs (the garbage collector off, as the
command has it), with the counts that do not depend on the load.

- start-up: the process's CPU when `running.execute` starts (the interpreter, the imports of
  the command line and of the modules patched here, which the command imports later), and the
  `dataclasses` classes made in the whole run (each compiles its methods: `_process_class`);
- the stages of `pipeline.run`: discover, the project's pins (`project_target`), the collection
  (`collect_project`: the reads, the trial, the resolutions, the word index) and `process`
  (the rules, the settle, the rest);
- the parses: `ast` parses by stage, their characters; the settle's parse checks of the word
  files no search read (`may_parse`, Python's parser without `ast` objects), their characters.

Inclusive times (a stage's time holds its parses). `cProfile` inflates Python code ~2.5x and
charges a garbage collection to `running.check` that the command never makes (cProfile runs
the module without making it `__main__`, so the run collects again at its end); this does
neither.

    python bench/outside_rules.py /work/corpora/Lightning-AI+pytorch-lightning
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from in_process import check_quietly

CPU: collections.defaultdict[str, float] = collections.defaultdict(float)
COUNT: collections.Counter[str] = collections.Counter()
CHARS: collections.Counter[str] = collections.Counter()
STAGE: list[str] = ["start-up"]
MARKS: dict[str, float] = {}


def timed(name: str, function: Callable[..., Any], stage: bool = False) -> Callable[..., Any]:
    def inner(*args: Any, **kwargs: Any) -> Any:
        if stage:
            STAGE.append(name)
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            CPU[name] += time.process_time() - start
            COUNT[name] += 1
            if stage:
                STAGE.pop()

    return inner


def patch() -> None:
    process_class = dataclasses._process_class  # type: ignore[attr-defined]

    def made(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return process_class(*args, **kwargs)
        finally:
            CPU["dataclasses made"] += time.process_time() - start
            COUNT["dataclasses made"] += 1

    dataclasses._process_class = made  # type: ignore[attr-defined]
    parse = ast.parse

    def counted_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        key = f"ast parses in {STAGE[-1]}"
        COUNT[key] += 1
        CHARS[key] += len(source)
        start = time.process_time()
        try:
            return parse(source, *args, **kwargs)
        finally:
            CPU[key] += time.process_time() - start

    ast.parse = counted_parse

    from amp_clipfix import pipeline, run_notes, running
    from amp_clipfix.analysis import project_collect, project_resolve, word_index

    run_notes.is_the_command = lambda: True  # as the command: no collection after the run
    execute = running.execute

    def marked(*args: Any, **kwargs: Any) -> Any:
        MARKS["execute"] = time.process_time()
        return execute(*args, **kwargs)

    running.execute = marked
    for name in ("discover", "project_target", "collect_project", "process"):
        setattr(pipeline, name, timed(name, getattr(pipeline, name), stage=True))
    for name in ("trainer_files", "resolve_collection"):
        setattr(project_resolve, name, timed(name, getattr(project_resolve, name)))
    project_collect.read_project = timed("read_project", project_collect.read_project)
    word_index.words_of = timed("word index", word_index.words_of)
    may_parse = project_resolve.may_parse

    def checked(text: str) -> bool:
        CHARS["settle parse checks"] += len(text)
        return may_parse(text)

    project_resolve.may_parse = timed("settle parse checks", checked)
    pipeline.searching_rules_of = timed("searching_rules_of", pipeline.searching_rules_of)
    from amp_clipfix import rules

    rules.find_findings = timed("rules (find_findings)", rules.find_findings, stage=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    arguments = parser.parse_args()
    patch()
    check_quietly(arguments.folder, exits=False)
    total = time.process_time()
    print(f"{'CPU s':>7} {'count':>6} {'chars':>9}  what")
    print(f"{total:7.3f} {'':>6} {'':>9}  the process (in process: no os._exit)")
    start_up = MARKS.get("execute", 0.0)
    print(f"{start_up:7.3f} {'':>6} {'':>9}  start-up and the patched modules' imports")
    for name, seconds in sorted(CPU.items(), key=lambda item: -item[1]):
        chars = f"{CHARS[name]:9d}" if CHARS[name] else f"{'':>9}"
        print(f"{seconds:7.3f} {COUNT[name]:6d} {chars}  {name}")


if __name__ == "__main__":
    main()
