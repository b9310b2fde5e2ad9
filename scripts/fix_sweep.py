#!/usr/bin/env python3
"""Apply every fix to real repositories in a scratch copy and show that what was written runs.

Issue 36's sweep: for each corpus folder (a repository's HEAD, /work/corpora by default; never
written to), a real copy under `--scratch` gets, in this order:

1. `amp-clipfix check --no-cache --format json .`            findings before
2. `ruff check --isolated --select F,E9 --output-format json .`  diagnostics before
3. `amp-clipfix apply --yes --no-cache --strategy auto .`    then the same with `--strategy unfuse`
4. `compile()` of every changed `.py` file, `yaml.safe_load_all` of every changed YAML file
   (notebooks: ruff's E9 reads their cells)
5. steps 1 and 2 again: findings and diagnostics after

and the report gives per corpus the files changed, findings before / after by code, the findings
a fix was offered for that are still reported, new findings, compile failures, new ruff
diagnostics and the exit codes. Findings and diagnostics are compared as multisets of
(file, code, message), never by line: a fix moves the lines below it.

    python scripts/fix_sweep.py                          # every corpus of /work/corpora
    python scripts/fix_sweep.py --only karpathy+nanoGPT  # some of them
    python scripts/fix_sweep.py --json /tmp/fix-sweep.json

Exit 1 when any corpus shows a problem (a compile failure, a new diagnostic or finding, a fixed
finding still reported, an exit code other than 0/1, a crash).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))
from benchmark import child_environment  # noqa: E402
from corpora import DEFAULT_ROOT, corpora, ruff_binary  # noqa: E402
from corpus import measure  # noqa: E402
from sweep import count, crashed, error_lines  # noqa: E402

TOOL = (sys.executable, "-m", "amp_clipfix")
CHECK = ("check", "--no-cache", "--format", "json", ".")
RUFF = ("check", "--no-cache", "--isolated", "--select", "F,E9", "--output-format", "json", ".")
STRATEGIES = ("auto", "unfuse")
TIMEOUT = 1800.0

Key = tuple[str, str, str]  # (file, code, message)


@dataclass
class Run:
    """One command's exit code and the lines of its stderr that matter."""

    what: str
    returncode: int
    seconds: float
    errors: list[str] = field(default_factory=list)
    crash: str = ""


@dataclass
class CorpusResult:
    name: str
    files_changed: list[str] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    addressed: dict[str, int] = field(default_factory=dict)  # offered a fix, gone after
    still_reported: list[str] = field(default_factory=list)  # offered a fix, still there
    new_findings: list[str] = field(default_factory=list)
    compile_failures: list[str] = field(default_factory=list)
    ruff_before: int = 0
    ruff_after: int = 0
    new_ruff: list[str] = field(default_factory=list)
    gone_ruff: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    @property
    def problems(self) -> int:
        bad_runs = sum(1 for r in self.runs if r.crash or r.returncode not in (0, 1))
        return (
            len(self.still_reported)
            + len(self.new_findings)
            + len(self.compile_failures)
            + len(self.new_ruff)
            + bad_runs
        )


def run(what: str, command: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[Run, str]:
    measured = measure(list(command), cwd, env, timeout=TIMEOUT)
    result = Run(what, measured.returncode, measured.seconds, error_lines(measured))
    if crashed(measured) or measured.timed_out:
        result.crash = " | ".join(measured.stderr.strip().splitlines()[-3:])
    return result, measured.stdout


def finding_key(finding: dict) -> Key:
    return (finding["path"], finding["code"], finding["message"])


def findings_of(stdout: str) -> list[dict]:
    try:
        return list(json.loads(stdout)["findings"])
    except (ValueError, KeyError):
        return []


def diagnostics_of(stdout: str, root: Path) -> Counter[Key]:
    try:
        items = json.loads(stdout)
    except ValueError:
        return Counter()
    keys: Counter[Key] = Counter()
    for item in items:
        path = Path(item["filename"])
        with_root = path.relative_to(root) if path.is_relative_to(root) else path
        keys[(with_root.as_posix(), str(item.get("code")), item["message"])] += 1
    return keys


def snapshot(root: Path) -> dict[str, str]:
    """Hash of every file under `root` (code, notebooks, YAML configs), by relative path."""
    hashes = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            hashes[path.relative_to(root).as_posix()] = digest
    return hashes


def compile_error(data: bytes, name: str) -> str:
    """Why `data` does not compile (Python) or load (YAML); "" when it does or is neither."""
    try:
        if name.endswith((".py", ".pyi")):
            compile(data, name, "exec", dont_inherit=True)
        elif name.endswith((".yaml", ".yml")):
            list(yaml.safe_load_all(data))
    except (SyntaxError, ValueError, yaml.YAMLError) as error:
        return f"{type(error).__name__}: {error}"
    return ""


def by_code(keys: Counter[Key]) -> dict[str, int]:
    codes: Counter[str] = Counter()
    for (_, code, _), n in keys.items():
        codes[code] += n
    return dict(sorted(codes.items()))


def shown(keys: Counter[Key]) -> list[str]:
    return [
        f"{path}: {code} {message}"
        for (path, code, message), n in sorted(keys.items())
        for _ in range(n)
    ]


def sweep_one(source: Path, scratch: Path) -> CorpusResult:
    result = CorpusResult(source.name)
    root = scratch / source.name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root, symlinks=True)  # a real copy: apply rewrites files in place
    env = child_environment(scratch)

    def state(when: str) -> tuple[list[dict], Counter[Key]]:
        """The findings of `check` and the diagnostics of ruff, now."""
        check, out = run(f"check {when}", [*TOOL, *CHECK], root, env)
        lint, lint_out = run(f"ruff {when}", [ruff_binary(), *RUFF], root, env)
        result.runs.extend((check, lint))
        return findings_of(out), diagnostics_of(lint_out, root)

    before, ruff_before = state("before")
    hashes = snapshot(root)
    for strategy in STRATEGIES:
        command = [*TOOL, "apply", "--yes", "--no-cache", "--strategy", strategy, "."]
        result.runs.append(run(f"apply {strategy}", command, root, env)[0])
    after_hashes = snapshot(root)
    result.files_changed = sorted(p for p in after_hashes if hashes.get(p) != after_hashes[p])
    for path in result.files_changed:
        new = compile_error((root / path).read_bytes(), path)
        if new and not compile_error((source / path).read_bytes(), path):
            result.compile_failures.append(f"{path}: {new}")
    after, ruff_after = state("after")

    before_keys = Counter(finding_key(f) for f in before)
    after_keys = Counter(finding_key(f) for f in after)
    fixable = Counter(finding_key(f) for f in before if (f.get("fix") or {}).get("edits"))
    result.before, result.after = by_code(before_keys), by_code(after_keys)
    result.addressed = by_code(fixable - after_keys)
    # A key can repeat (two findings of one code and message in a file): the ones left after
    # apply are first the ones that had no fix.
    unfixable = before_keys - fixable
    result.still_reported = shown((after_keys - unfixable) & fixable)
    result.new_findings = shown(after_keys - before_keys)
    result.ruff_before, result.ruff_after = ruff_before.total(), ruff_after.total()
    result.new_ruff = shown(ruff_after - ruff_before)
    result.gone_ruff = shown(ruff_before - ruff_after)
    return result


def table(results: Sequence[CorpusResult]) -> list[str]:
    lines = [
        "| corpus | files changed | findings before | after | fixed | still reported | new "
        "| compile failures | ruff F/E9 before / after | new ruff | exits (check, apply auto, "
        "apply unfuse, check) |",
        "|---|---:|---|---|---|---:|---:|---:|---|---:|---|",
    ]
    for r in results:
        exits = ", ".join(str(x.returncode) for x in r.runs if not x.what.startswith("ruff"))
        lines.append(
            f"| {r.name} | {len(r.files_changed)} | {count(r.before)} | {count(r.after)} "
            f"| {count(r.addressed)} | {len(r.still_reported)} | {len(r.new_findings)} "
            f"| {len(r.compile_failures)} | {r.ruff_before} / {r.ruff_after} | {len(r.new_ruff)} "
            f"| {exits} |"
        )
    return lines


def details(results: Sequence[CorpusResult]) -> list[str]:
    lines: list[str] = []
    for r in results:
        items = [
            *(f"changed: {p}" for p in r.files_changed),
            *(f"STILL REPORTED: {s}" for s in r.still_reported),
            *(f"NEW FINDING: {s}" for s in r.new_findings),
            *(f"COMPILE FAILURE: {s}" for s in r.compile_failures),
            *(f"NEW RUFF: {s}" for s in r.new_ruff),
            *(f"ruff gone: {s}" for s in r.gone_ruff),
            *(f"CRASH in {x.what}: {x.crash}" for x in r.runs if x.crash),
            *(f"{x.what} exit {x.returncode}: {e}" for x in r.runs for e in x.errors[:10]),
        ]
        if items:
            lines.append(f"### {r.name}")
            lines.extend(f"- {item}" for item in items)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--scratch", type=Path, default=None, help="default: a temp folder")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    arguments = parser.parse_args(argv)

    scratch = arguments.scratch or Path(tempfile.mkdtemp(prefix="amp-clipfix-fix-sweep-"))
    scratch.mkdir(parents=True, exist_ok=True)
    results = []
    for folder in corpora(arguments.root, arguments.only):
        print(f"corpus {folder.name} ...", file=sys.stderr, flush=True)
        result = sweep_one(folder, scratch)
        if not arguments.keep:
            shutil.rmtree(scratch / folder.name, ignore_errors=True)
        print(
            f"  {len(result.files_changed)} changed, {result.problems} problems",
            file=sys.stderr,
            flush=True,
        )
        results.append(result)
    print("\n".join([*table(results), "", *details(results)]))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    if arguments.keep:
        print(f"scratch copies kept in {scratch}", file=sys.stderr)
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
