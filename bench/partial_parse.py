"""What a partial parse could save: a summary's module parsed without the bodies of its
module-level and class-level functions, each body parsed from the module's lines when first
read (as `analysis/bodies.py` parses a body it let go). Session 36 (`light36`) measured it
and did not build it (bench/README).

One `check --no-cache --format json TREE` runs in process; every module the run noted
(`Bodies.note`: the summaries it parsed itself) is kept with which of its functions' bodies
were read for good or looked at (`peek`). Printed: the counts, and the characters of the
modules and of the bodies by kind. `--save FILE` writes the texts each way of parsing would
parse (JSON), built from an oracle (the whole parse's own positions, not a text scan):

- `whole`: the modules, as today;
- `ceiling`: the modules with the bodies never read nor looked at left out (blank lines);
- `skeleton`: the modules with every body left out (what a parse must do before anything
  is read: it cannot know which bodies will be);
- `bodies`: the functions read or looked at, as `bodies.function_from_lines` parses each
  (the decorators' first line to the last, at its own line numbers, under `if 1:` when
  indented);
- `symtable`: the modules through `symtable` (the parser without `ast` objects: the cheapest
  way to know that the bodies left out parse, which a cold run must know to report the same
  errors);
- `scan`: the modules through a regex of strings, comments, brackets and line breaks with a
  loop keeping the depth (the least a scan finding the bodies' lines must do).

`--parse FILE WAY` parses one way's texts once: run it under callgrind, and subtract
`--parse FILE none` (start-up and the JSON), for instruction counts the load does not move;
`--time FILE` gives process CPU, best of 5, for every way.

    python bench/partial_parse.py /work/corpora/Lightning-AI+pytorch-lightning --save /tmp/l.json
    valgrind --tool=callgrind python bench/partial_parse.py --parse /tmp/l.json skeleton
"""

from __future__ import annotations

import argparse
import ast
import collections
import gc
import json
import re
import symtable
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

WAYS = ("whole", "ceiling", "skeleton", "bodies", "symtable", "scan")
# Strings (a prefix changes no boundary: `r"\""` ends where `"\""` does), comments, brackets,
# line breaks and backslashes, each string's loop unrolled (about half the instructions of
# `(?:[^"\\]|\\.)*`).
SCAN = re.compile(
    r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|#[^\n]*|[()\[\]{}\n\\]",
    re.S,
)


def noted_modules(folder: str) -> list[tuple[str, dict[tuple[int, int], str]]]:
    """The modules the run noted, each with its functions by position: "read" (for good),
    "looked" (`peek` only) or "never"."""
    sys.path.insert(0, "bench")
    from in_process import check_quietly

    from amp_clipfix.analysis import bodies

    noted: list[tuple[Sequence[bytes], list[Any]]] = []
    looked: set[int] = set()
    note, peek = bodies.Bodies.note, bodies.peek

    def noting(self: Any, tree: ast.Module, lines: Sequence[bytes]) -> None:
        before = len(self.unread)
        note(self, tree, lines)
        noted.append((lines, [node for node, _ in self.unread[before:]]))

    def peeking(node: Any) -> Any:
        looked.add(id(node))
        return peek(node)

    bodies.Bodies.note = noting  # type: ignore[method-assign]
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("amp_clipfix") and getattr(module, "peek", None) is peek:
            module.peek = peeking  # type: ignore[attr-defined]
    check_quietly(folder, exits=False)
    modules = []
    for lines, functions in noted:
        kinds = {}
        for node in functions:
            read = type(node) not in bodies.UNREAD_KINDS
            kind = "read" if read else "looked" if id(node) in looked else "never"
            kinds[(node.lineno, node.col_offset)] = kind
        modules.append((b"\n".join(lines).decode("utf-8"), kinds))
    return modules


def noted_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions `Bodies.note` notes: at module level, in classes, in `if` / `try`."""
    todo: list[ast.stmt] = list(tree.body)
    found = []
    while todo:
        statement = todo.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(statement)
        elif isinstance(statement, ast.ClassDef):
            todo.extend(statement.body)
        elif isinstance(statement, (ast.If, ast.Try)):
            todo.extend(statement.body)
            todo.extend(statement.orelse)
            if isinstance(statement, ast.Try):
                todo.extend(statement.finalbody)
                for handler in statement.handlers:
                    todo.extend(handler.body)
    return found


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int] | None:
    """The first and last line of a body on lines of its own (None: on the `def`'s line)."""
    first = function.body[0]
    decorators = getattr(first, "decorator_list", None)
    start = decorators[0].lineno if decorators else first.lineno
    if start == function.lineno or function.end_lineno is None:
        return None
    return start, function.end_lineno


def function_text(function: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> str:
    """The text `bodies.function_from_lines` parses for `function`."""
    first = function.decorator_list[0].lineno if function.decorator_list else function.lineno
    segment = "\n".join(lines[first - 1 : function.end_lineno])
    head = "\n" * (first - 2) + "if 1:\n" if function.col_offset else "\n" * (first - 1)
    return head + segment + "\n"


def ways_of(
    modules: list[tuple[str, dict[tuple[int, int], str]]],
) -> tuple[dict[str, list[str]], collections.Counter[str]]:
    texts: dict[str, list[str]] = {way: [] for way in ("whole", "ceiling", "skeleton", "bodies")}
    counts: collections.Counter[str] = collections.Counter()
    for text, kinds in modules:
        lines = text.split("\n")
        ceiling, skeleton = list(lines), list(lines)
        counts["modules"] += 1
        counts["module characters"] += len(text)
        for function in noted_functions(ast.parse(text)):
            kind = kinds.get((function.lineno, function.col_offset), "never")
            span = body_lines(function)
            counts[f"functions {kind}"] += 1
            if span is None:
                counts["functions with a body on the def's line (kept)"] += 1
                continue
            start, end = span
            counts[f"body characters {kind}"] += sum(
                len(line) + 1 for line in lines[start - 1 : end]
            )
            left_out = [""] * (end - start + 1)
            left_out[0] = " " * function.body[0].col_offset + "..."
            skeleton[start - 1 : end] = left_out
            if kind == "never":
                ceiling[start - 1 : end] = left_out
            else:
                texts["bodies"].append(function_text(function, lines))
        texts["whole"].append(text)
        texts["ceiling"].append("\n".join(ceiling))
        texts["skeleton"].append("\n".join(skeleton))
    for way, parsed in texts.items():
        counts[f"characters parsed: {way}"] = sum(map(len, parsed))
    return texts, counts


def scan(text: str) -> int:
    depth = deepest = 0
    for match in SCAN.finditer(text):
        token = match.group()
        if token in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in ")]}":
            depth -= 1
    return deepest


def parser_of(way: str) -> tuple[str, Callable[[str], object]]:
    """The texts a way reads and what it does with each."""
    if way == "symtable":
        return "whole", lambda text: symtable.symtable(text, "<partial>", "exec")
    if way == "scan":
        return "whole", scan
    return way, ast.parse


def parse_once(texts: dict[str, list[str]], way: str) -> None:
    if way == "none":
        return
    source, parse = parser_of(way)
    for text in texts[source]:
        parse(text)


def timed(texts: dict[str, list[str]]) -> None:
    for way in WAYS:
        source, parse = parser_of(way)
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            for text in texts[source]:
                parse(text)
            best = min(best, time.process_time() - start)
        print(f"{way:10} {best * 1000:8.1f} ms CPU (best of 5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="?")
    parser.add_argument("--save", help="write the texts of each way (JSON)")
    parser.add_argument("--parse", nargs=2, metavar=("FILE", "WAY"), help="parse once")
    parser.add_argument("--time", metavar="FILE", help="CPU of each way, best of 5")
    args = parser.parse_args()
    gc.disable()
    if args.parse or args.time:
        with open(args.parse[0] if args.parse else args.time) as saved:
            texts = json.load(saved)
        if args.parse:
            parse_once(texts, args.parse[1])
        else:
            timed(texts)
        return
    texts, counts = ways_of(noted_modules(args.tree))
    for name, count in sorted(counts.items()):
        print(f"{name}: {count:,}")
    if args.save:
        with open(args.save, "w") as out:
            json.dump(texts, out)


if __name__ == "__main__":
    main()
