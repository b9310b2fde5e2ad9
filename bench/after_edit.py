"""Issue 35's after-an-edit figures: a warm `check .` and the pre-commit hook's command after a
one-line edit, each against a cold `--no-cache` run of the same tree (bytes compared).

    python bench/after_edit.py CORPUS FILE [FILE ...]           # e.g. /work/corpora/X pkg/mod.py
    python bench/after_edit.py CORPUS FILE --pythonpath /tmp/base/src   # another checkout

The corpus is copied to a scratch folder (the cache lives in the project's root) and committed
to a new git repository there, or as it is to its own when it is a checkout (the hook's
`--tracked-only` reads what git tracks). Then, CPU
(user + system of the command and every process it reaped, `os.wait4`) of:

1. a cold `check .` (fills the caches), then `check .` unchanged (the replay);
2. per FILE: a line `_edited = 1` put before its first top-level `def` / `class`, above its
   decorators (every line below moves; `--at-end`: at its end, no line moves), then
   `check .`;
3. per FILE: one more such line, the file staged, then the hook's command
   `check --tracked-only --force-exclude -- FILE` (.pre-commit-hooks.yaml).

Each warm output is compared with a `check --no-cache` run of the same command on the same
tree: `same`, or `DIFFERENT` (exit 1). Bytecode is cached outside the tree (PYTHONPYCACHEPREFIX),
as an installed tool has it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import amp_clipfix_command, child_environment, load_average  # noqa: E402
from corpus import measure  # noqa: E402

FIRST_DEFINITION = re.compile(r"^(?:@|async def |def |class )", re.MULTILINE)
GIT = ["git", "-c", "user.email=bench@example.invalid", "-c", "user.name=bench"]


def edit(path: Path, at_end: bool = False, name: str = "_edited") -> None:
    """A line `<name> = 1` before the first top-level definition, above its decorators (else,
    or `at_end`, at the end: no line of the file moves)."""
    text = path.read_text(encoding="utf-8")
    found = None if at_end else FIRST_DEFINITION.search(text)
    at = found.start() if found else len(text)
    if at == len(text) and text and not text.endswith("\n"):
        text, at = text + "\n", at + 1
    path.write_text(f"{text[:at]}{name} = 1\n{text[at:]}", encoding="utf-8")


def timed(tree: Path, env: dict[str, str], *arguments: str) -> tuple[float, str]:
    """CPU seconds of `check ARGUMENTS`, and whether its output equals a `--no-cache` run's."""
    command = [*amp_clipfix_command(), "check"]
    warm = measure([*command, *arguments], tree, env)
    cold = measure([*command, "--no-cache", *arguments], tree, env)
    same = (warm.stdout, warm.returncode) == (cold.stdout, cold.returncode)
    return warm.cpu_seconds, "same" if same else "DIFFERENT"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("files", nargs="+", help="files of the corpus to edit, one at a time")
    parser.add_argument("--pythonpath", help="put this folder first on PYTHONPATH")
    parser.add_argument(
        "--at-end", action="store_true", help="put the line at the end (no line moves)"
    )
    arguments = parser.parse_args(argv)
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="amp-clipfix-after-edit-") as scratch:
        env = child_environment(Path(scratch))
        if arguments.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (arguments.pythonpath, env.get("PYTHONPATH")) if p
            )
        tree = Path(scratch) / arguments.corpus.name
        shutil.copytree(arguments.corpus, tree, symlinks=True)
        shutil.rmtree(tree / ".amp_clipfix_cache", ignore_errors=True)
        for step in (
            ["init", "-q"],
            ["add", "-A", "-f"],
            ["commit", "-qm", "corpus", "--allow-empty"],
        ):
            subprocess.run([*GIT, *step], cwd=tree, check=True, capture_output=True)
        command = [*amp_clipfix_command(), "check", "."]
        cold = measure(command, tree, env)
        unchanged = measure(command, tree, env)
        print(f"cold `check .`: {cold.cpu_seconds:.2f} s; unchanged: {unchanged.cpu_seconds:.2f} s")
        different = False
        for name in arguments.files:
            edit(tree / name, arguments.at_end)
            seconds, same = timed(tree, env, ".")
            print(f"{name}: one-line edit, `check .`: {seconds:.2f} s ({same})")
            edit(tree / name, arguments.at_end)
            subprocess.run([*GIT, "add", name], cwd=tree, check=True)
            hook = ("--tracked-only", "--force-exclude", "--", name)
            hook_seconds, hook_same = timed(tree, env, *hook)
            print(f"{name}: pre-commit command: {hook_seconds:.2f} s ({hook_same})")
            different |= "DIFFERENT" in (same, hook_same)
    print(f"load average after: {load_average()}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
