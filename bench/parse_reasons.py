"""Why one `check --no-cache --format json` of a folder parses what it parses, counted in
process (the counts do not depend on the load; the CPU figures are `time.process_time` around
each parse, gc off as the command has it).

- summaries (`analysis.summary.summarise` that parse): per rule (or the collection before the
  rules), why the module was read: a rule's own word search (`with_words`), a file a search
  loaded by path (`ProjectFacts.file`), a module the evaluator followed an import into, a
  callers' file, a decorator's module, another evaluator read; and whether it holds one of
  the searching rules' words (a word file: the settle would check that it parses anyway, so a
  smaller parse could save at most what `ast.parse` costs over that check on the same text);
- the settle's parse checks (`project_resolve.may_parse`): the files, and which of the
  searching rules' words each holds (the words that made it a word file);
- the other `ast` parses (bodies parsed again, text tests, pins), and any text parsed more than
  once in the run (by its hash).

    python bench/parse_reasons.py /work/corpora/Lightning-AI+pytorch-lightning
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import gc
import hashlib
import symtable
import sys
import time
from pathlib import Path
from typing import Any

from in_process import check_quietly

# The frames (function names) that say why a summary was loaded, the first found upwards wins.
REASONS = (
    ("with_words", "word search"),
    ("file", "a file a search loaded"),
    ("find_module", "import followed"),
    ("caller_files", "callers' file"),
    ("search_callers", "callers' file"),
    ("applications", "decorator's module"),
    ("summaries_with", "subclasses' modules"),
)

SUMMARIES: list[dict[str, Any]] = []
PARSES: list[dict[str, Any]] = []
CHECKS: list[dict[str, Any]] = []
WORDS: list[bytes] = []
ORIGINAL_PARSE, ORIGINAL_TABLE = ast.parse, symtable.symtable  # unpatched, to time again


def digest(text: str | bytes) -> str:
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return hashlib.sha1(data).hexdigest()


def rule_and_reason() -> tuple[str, str]:
    """The rule running (the local `rule` of `rules.find_findings`) and why, from the stack."""
    reason = "evaluator, other"
    found = False
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_name
        if not found:
            for frame_name, why in REASONS:
                if name == frame_name and frame.f_globals.get("__name__", "").startswith(
                    "amp_clipfix"
                ):
                    reason, found = why, True
                    break
        if name == "find_findings" and "rule" in frame.f_locals:
            return str(getattr(frame.f_locals["rule"], "code", "?")), reason
        if name == "settle":
            return "settle", reason
        frame = frame.f_back
    return "collection", reason if found else "collection"


def caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("amp_clipfix") and module != "amp_clipfix.analysis.parse":
            return f"{module.rsplit('.', 1)[-1]}.{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def patch() -> None:
    from amp_clipfix import run_notes
    from amp_clipfix.analysis import project_resolve, summary

    run_notes.is_the_command = lambda: True
    parse, table = ORIGINAL_PARSE, ORIGINAL_TABLE
    summarise, facts = summary.summarise, project_resolve.project_facts

    def counted_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return parse(source, *args, **kwargs)
        finally:
            rule, _ = rule_and_reason()
            PARSES.append(
                {
                    "hash": digest(source),
                    "chars": len(source),
                    "cpu": time.process_time() - start,
                    "by": caller(),
                    "rule": rule,
                }
            )

    def counted_table(source: str, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return table(source, *args, **kwargs)
        finally:
            data = source.encode("utf-8", "replace")
            CHECKS.append(
                {
                    "hash": digest(source),
                    "chars": len(source),
                    "cpu": time.process_time() - start,
                    "words": tuple(word for word in dict.fromkeys(WORDS) if word in data),
                    "text": source,
                }
            )

    def counted_summary(
        root: Path, path: Path, text: str, tree: Any = None, data: Any = None, bodies: Any = None
    ) -> Any:
        rule, reason = rule_and_reason()
        SUMMARIES.append(
            {
                "path": path,
                "hash": digest(text),
                "chars": len(text),
                "parsed": tree is None,
                "rule": rule,
                "reason": reason,
                "text": text,
            }
        )
        return summarise(root, path, text, tree, data, bodies)

    def noted_facts(collection: Any, target: Any, words: tuple[bytes, ...]) -> Any:
        WORDS.extend(words)
        return facts(collection, target, words)

    ast.parse = counted_parse  # type: ignore[assignment]
    symtable.symtable = counted_table  # type: ignore[assignment]
    summary.summarise = counted_summary  # type: ignore[assignment]
    project_resolve.project_facts = noted_facts  # type: ignore[assignment]


def best_of(texts: list[str], function: Any, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for text in texts:
            # a file that does not parse costs its attempt
            with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
                function(text)
        best = min(best, time.process_time() - start)
    return best


def report(root: Path) -> None:
    parse, table = ORIGINAL_PARSE, ORIGINAL_TABLE
    for entry in SUMMARIES:  # the words are known once the rules' facts were made
        encoded = entry["text"].encode("utf-8", "replace")
        entry["word file"] = any(word in encoded for word in WORDS)
    print("summaries that parse, by rule and reason (files, chars, of them word files):")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for entry in SUMMARIES:
        if entry["parsed"]:
            groups[(entry["rule"], entry["reason"])].append(entry)
    for (rule, reason), entries in sorted(groups.items()):
        words = sum(1 for entry in entries if entry["word file"])
        chars = sum(entry["chars"] for entry in entries)
        print(f"  {rule:10} {reason:24} {len(entries):4d} {chars:9d}  word files {words}")
    given = sum(1 for entry in SUMMARIES if not entry["parsed"])
    print(f"  (and {given} summaries made from a tree the collection had parsed)")
    parsed = [entry for entry in SUMMARIES if entry["parsed"]]
    for label, chosen in (
        ("word files", [e["text"] for e in parsed if e["word file"]]),
        ("other modules", [e["text"] for e in parsed if not e["word file"]]),
    ):
        whole = best_of(chosen, parse)
        checked = best_of(chosen, lambda text: table(text, "<t>", "exec"))
        print(
            f"  {label}: {len(chosen)} files, {sum(map(len, chosen))} chars: ast.parse "
            f"{whole:.4f} s, the settle's check of the same texts {checked:.4f} s"
        )
    print()
    print("settle parse checks, by the searching rules' words the file holds:")
    by_words = collections.Counter(entry["words"] for entry in CHECKS)
    for words, files in by_words.most_common():
        chars = sum(entry["chars"] for entry in CHECKS if entry["words"] == words)
        shown = b" ".join(words).decode("utf-8", "replace")
        print(f"  {files:4d} files {chars:9d} chars  {shown}")
    texts = [entry["text"] for entry in CHECKS]
    print(
        f"  all: {len(CHECKS)} files, {sum(map(len, texts))} chars, "
        f"{sum(entry['cpu'] for entry in CHECKS):.4f} s in the run; again now: symtable "
        f"{best_of(texts, lambda text: table(text, '<t>', 'exec')):.4f} s, ast.parse "
        f"{best_of(texts, parse):.4f} s"
    )
    print()
    print("other ast parses (not a summary's), by caller:")
    summary_hashes = {entry["hash"] for entry in SUMMARIES if entry["parsed"]}
    others = collections.defaultdict(list)
    for entry in PARSES:
        if entry["by"] != "summary.summarise" and entry["hash"] not in summary_hashes:
            others[entry["by"]].append(entry)
    for by, entries in sorted(others.items(), key=lambda item: -len(item[1])):
        chars = sum(entry["chars"] for entry in entries)
        cpu = sum(entry["cpu"] for entry in entries)
        print(f"  {by:40} {len(entries):4d} {chars:9d} chars {cpu:.4f} s")
    print()
    print("texts parsed more than once (summary, ast.parse, settle check):")
    seen: dict[str, list[str]] = collections.defaultdict(list)
    for entry in PARSES:
        seen[entry["hash"]].append(f"{entry['rule']}:{entry['by']}")
    for entry in CHECKS:
        seen[entry["hash"]].append("settle:may_parse")
    names = {entry["hash"]: entry["path"] for entry in SUMMARIES}
    twice = {digest_: by for digest_, by in seen.items() if len(by) > 1}
    for digest_, by in twice.items():
        name = names.get(digest_)
        shown = str(name.relative_to(root)) if isinstance(name, Path) else f"a text {digest_[:8]}"
        print(f"  {shown}: {', '.join(by)}")
    if not twice:
        print("  none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    arguments = parser.parse_args()
    patch()
    gc.disable()
    check_quietly(arguments.folder, exits=False)
    report(Path(arguments.folder).resolve())


if __name__ == "__main__":
    main()
