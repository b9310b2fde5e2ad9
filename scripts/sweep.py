#!/usr/bin/env python3
"""Run amp-clipfix over real code and report what it did, so that every change can be read.

Fixtures show that the tool fixes what we wrote; a sweep shows what it does to code we did not
write: whether it crashes, writes code that does not parse, changes files again on a second run,
or changes code that never had the problem. It builds a corpus in a temporary folder from
installed sources (torch, lightning) and from packages with Lightning training code fetched with
`pip download --no-deps`, runs `check --format json` and `apply --yes` (twice) as subprocesses on
each corpus folder, and prints a markdown table plus every change with the finding behind it.

    python scripts/sweep.py                     # torch, lightning and the default packages
    python scripts/sweep.py --packages litgpt   # only these downloads
    python scripts/sweep.py --offline           # installed sources only

See scripts/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from corpus import Measurement, measure, package_folder, tree_from_folder

from amp_clipfix.output.report import is_error_line

INSTALLED = ("torch", "lightning")
# Packages whose sources hold Lightning training code (Trainer / Fabric / LightningModule).
PACKAGES = (
    "litgpt",
    "lightly-train",
    "stable-pretraining",
    "alphafold3-pytorch",
    "alphafold3-pytorch-lightning-hydra",
    "lightning-bolts",
    "pytorch-forecasting",
    "anomalib",
    "boltz",
    "neuralforecast",
    "pyannote-audio",
    "scvi-tools",
    "torchgeo",
    "pytorch-tabular",
    "lightning-uq-box",
    "nemo-toolkit",
)
TOOL = (sys.executable, "-m", "amp_clipfix")
CONTROL = Path(__file__).resolve().parent.parent / "examples" / "sample_project"
TIMEOUT = 3600
MEMORY_LIMIT_MB = 300


def crashed(run: Measurement) -> bool:
    """A crash is anything but a reported result: an exit code other than 0/1/2 (a run killed
    after TIMEOUT included), a traceback, or an internal-error line."""
    return (
        run.returncode not in (0, 1, 2)
        or "Traceback (most recent call last)" in run.stderr
        or "internal error" in run.stderr
    )


def error_lines(run: Measurement) -> list[str]:
    return [line for line in run.stderr.splitlines() if is_error_line(line)]


@dataclass
class Change:
    """One file `apply --yes` changed, the diff and the findings whose fix touches it."""

    path: str
    diff: list[str]
    findings: list[str]
    parses: bool


@dataclass
class CorpusReport:
    name: str
    source: str
    py_files: int = 0
    files_seen: int = 0
    by_code: dict[str, int] = field(default_factory=dict)
    remaining_by_code: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    non_idempotent: list[str] = field(default_factory=list)
    check_seconds: float = 0.0
    apply_seconds: float = 0.0
    check_peak_mb: float = 0.0
    findings: list[dict] = field(default_factory=list)


def run_tool(args: Sequence[str], cwd: Path) -> Measurement:
    """Run the CLI and measure its wall time and peak resident memory (scripts/corpus.py: the
    largest of the process and the parse workers it waited for)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return measure([*TOOL, *args], cwd, env, timeout=TIMEOUT)


def download(package: str, folder: Path, prefer_sdist: bool) -> Path:
    """Fetch one distribution without its dependencies: the sdist when asked (it often carries
    examples and tests, i.e. more training code), else or failing that what pip picks."""
    attempts = [["--no-binary", ":all:"], []] if prefer_sdist else [[]]
    error: subprocess.CalledProcessError | None = None
    for extra in attempts:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *extra]
        try:
            subprocess.run(
                [*command, "-d", str(folder), package],
                check=True,
                capture_output=True,
                timeout=900,
            )
        except subprocess.CalledProcessError as failed:
            error = failed
            continue
        (archive,) = sorted(folder.iterdir())
        return archive
    assert error is not None
    raise error


def unpack_python(archive: Path, target: Path) -> int:
    """Extract the .py files of a wheel or sdist (nothing else, never outside `target`)."""
    count = 0
    target.mkdir(parents=True, exist_ok=True)

    def write(name: str, data: bytes) -> None:
        nonlocal count
        relative = Path(name)
        if relative.is_absolute() or ".." in relative.parts or not name.endswith(".py"):
            return
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
        count += 1

    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                if not info.is_dir():
                    write(info.filename, bundle.read(info))
    else:
        with tarfile.open(archive) as bundle:
            for member in bundle.getmembers():
                if member.isfile():
                    handle = bundle.extractfile(member)
                    if handle is not None:
                        write(member.name, handle.read())
    return count


def snapshot(root: Path) -> dict[str, str]:
    """Hash of every .py file under `root`, by path relative to it."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*.py"))
        if path.is_file() and not path.is_symlink()
    }


def diff_lines(old: bytes, new: bytes) -> list[str]:
    """Changed lines only (no context), for the report; difflib is fine outside the product."""
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    return [
        line
        for line in difflib.unified_diff(a, b, lineterm="", n=0)
        if not line.startswith(("---", "+++"))
    ]


def findings_touching(findings: Iterable[dict], path: str) -> list[str]:
    """`path:line CODE strategy: message` of the findings whose fix edits (or sites) are in
    `path`, where `path` is relative to the corpus parent, as the tool prints it."""
    out = []
    for finding in findings:
        fix = finding.get("fix") or {}
        edit_paths = {edit["path"] for edit in fix.get("edits", [])}
        site_paths = {site["path"] for site in finding.get("sites", [])}
        if path in edit_paths or (not edit_paths and path in site_paths):
            strategy = fix.get("strategy", "no fix")
            out.append(
                f"{finding['path']}:{finding['line']} {finding['code']} [{strategy}] "
                f"{finding['message']}"
            )
    return out


def parses(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    return True


def sweep_corpus(name: str, source: str, root: Path, pristine: Path) -> CorpusReport:
    """check, apply, apply again, check again on `root/name`; compare with `pristine/name`."""
    report = CorpusReport(name=name, source=source)
    report.py_files = sum(1 for _ in (root / name).rglob("*.py"))

    check = run_tool(["check", "--format", "json", name], cwd=root)
    report.check_seconds, report.check_peak_mb = check.seconds, check.peak_mb
    report.errors = error_lines(check)
    try:
        document = json.loads(check.stdout)
        report.files_seen = document["summary"]["files"]
        report.by_code = document["summary"]["by_code"]
        report.findings = document["findings"]
    except (ValueError, KeyError) as error:
        report.crashes.append(f"check: output is not the JSON report ({error})")
    record_crash(report, "check", check)

    before = snapshot(root / name)
    apply = run_tool(["apply", "--yes", name], cwd=root)
    report.apply_seconds = apply.seconds
    record_crash(report, "apply", apply)
    after = snapshot(root / name)
    for relative in sorted(path for path in after if before.get(path) != after[path]):
        old = (pristine / name / relative).read_bytes()
        new = (root / name / relative).read_bytes()
        shown = f"{name}/{relative}"
        change = Change(
            shown, diff_lines(old, new), findings_touching(report.findings, shown), True
        )
        change.parses = parses(new)
        if not change.parses:
            report.unparsable.append(shown)
        report.changes.append(change)

    again = run_tool(["apply", "--yes", name], cwd=root)
    record_crash(report, "second apply", again)
    final = snapshot(root / name)
    report.non_idempotent = sorted(path for path in final if final[path] != after.get(path))

    recheck = run_tool(["check", "--format", "json", name], cwd=root)
    record_crash(report, "check after apply", recheck)
    with contextlib.suppress(ValueError, KeyError):
        report.remaining_by_code = json.loads(recheck.stdout)["summary"]["by_code"]
    return report


def record_crash(report: CorpusReport, what: str, run: Measurement) -> None:
    if crashed(run):
        tail = " | ".join(run.stderr.strip().splitlines()[-3:])
        report.crashes.append(f"{what}: exit {run.returncode}: {tail}")


def build_corpus(
    root: Path,
    pristine: Path,
    packages: Sequence[str],
    offline: bool,
    prefer_sdist: bool,
    trees: Sequence[tuple[str, Path]] = (),
) -> tuple[list[tuple[str, str]], list[str]]:
    """Copy the control project and the installed sources and unpack the downloads; returns
    (name, source) pairs and a line for every package that could not be had."""
    corpora: list[tuple[str, str]] = []
    skipped: list[str] = []
    # A positive control: the sample project has findings, so a sweep that reports no change
    # anywhere else did at least see and fix these.
    shutil.copytree(CONTROL, root / "control" / CONTROL.name)
    corpora.append(("control", "examples/sample_project (has findings)"))
    for package in INSTALLED:
        location = package_folder(package)
        if location is None:
            skipped.append(f"{package}: not installed")
            continue
        tree_from_folder(package, location, root / package / package)
        corpora.append((package, f"installed ({location.parent})"))
    for name, folder in trees:  # local checkouts, e.g. the Lightning repository's src/tests
        ignore = shutil.ignore_patterns(".git", ".amp_clipfix_cache", "__pycache__")
        shutil.copytree(folder, root / name / folder.name, symlinks=True, ignore=ignore)
        corpora.append((name, f"local tree ({folder})"))
    if not offline:
        downloads = root.parent / "downloads"
        for package in packages:
            try:
                archive = download(package, downloads / package, prefer_sdist)
            except (subprocess.SubprocessError, ValueError) as error:
                detail = ""
                if isinstance(error, subprocess.CalledProcessError):
                    detail = error.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
                    detail = f": {detail[0]}" if detail else ""
                skipped.append(f"{package}: download failed{detail}")
                print(f"skipped {package}: download failed{detail}", file=sys.stderr)
                continue
            if unpack_python(archive, root / package) == 0:
                skipped.append(f"{package}: no Python files in {archive.name}")
                continue
            corpora.append((package, archive.name))
    for name, _ in corpora:
        shutil.copytree(root / name, pristine / name, symlinks=True)
    return corpora, skipped


def count(by_code: dict[str, int]) -> str:
    total = sum(by_code.values())
    if not total:
        return "0"
    return f"{total} ({', '.join(f'{code} {n}' for code, n in sorted(by_code.items()))})"


def table(reports: Sequence[CorpusReport]) -> list[str]:
    header = (
        "| corpus | source | files | findings | files changed | left after apply | "
        "file errors | crashes | unparsable | non-idempotent | check s | apply s | check MB |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for r in reports:
        lines.append(
            f"| {r.name} | {r.source} | {r.files_seen} | {count(r.by_code)} | {len(r.changes)} "
            f"| {count(r.remaining_by_code)} | {len(r.errors)} | {len(r.crashes)} "
            f"| {len(r.unparsable)} | {len(r.non_idempotent)} | {r.check_seconds:.1f} "
            f"| {r.apply_seconds:.1f} | {r.check_peak_mb:.0f} |"
        )
    total: Counter[str] = Counter()
    remaining: Counter[str] = Counter()
    for r in reports:
        total.update(r.by_code)
        remaining.update(r.remaining_by_code)
    lines.append(
        f"| **total** | {len(reports)} corpora | {sum(r.files_seen for r in reports)} "
        f"| {count(dict(total))} | {sum(len(r.changes) for r in reports)} "
        f"| {count(dict(remaining))} | {sum(len(r.errors) for r in reports)} "
        f"| {sum(len(r.crashes) for r in reports)} | {sum(len(r.unparsable) for r in reports)} "
        f"| {sum(len(r.non_idempotent) for r in reports)} "
        f"| {sum(r.check_seconds for r in reports):.1f} "
        f"| {sum(r.apply_seconds for r in reports):.1f} "
        f"| {max((r.check_peak_mb for r in reports), default=0):.0f} |"
    )
    return lines


def details(reports: Sequence[CorpusReport]) -> list[str]:
    """Every change with its findings and diff, then crashes and file errors."""
    lines: list[str] = []
    for r in reports:
        for change in r.changes:
            lines.append(f"### {change.path}{'' if change.parses else '  (DOES NOT PARSE)'}")
            lines.extend(f"- {finding}" for finding in change.findings or ["(no finding)"])
            lines.append("```diff")
            lines.extend(change.diff)
            lines.append("```")
    problems = [
        (r.name, kind, item)
        for r in reports
        for kind, items in (
            ("crash", r.crashes),
            ("unparsable", r.unparsable),
            ("non-idempotent", r.non_idempotent),
        )
        for item in items
    ]
    if problems:
        lines.append("### Problems")
        lines.extend(f"- {name}: {kind}: {item}" for name, kind, item in problems)
    errors = [(r.name, line) for r in reports for line in r.errors]
    if errors:
        reasons = Counter(line.split(": ", 2)[-1].split(":")[0] for _, line in errors)
        lines.append("### Files that could not be processed (one line each, run went on)")
        lines.extend(f"- {n} x {reason}" for reason, n in reasons.most_common())
        lines.extend(f"  - {name}: {line}" for name, line in errors[:40])
        if len(errors) > 40:
            lines.append(f"  - ... {len(errors) - 40} more in the JSON report")
    return lines


def memory_figure(root: Path, names: Sequence[str]) -> list[str]:
    """Peak memory of one `check` over torch + lightning: -j 1 (the whole run in one process)
    and the default pool (largest single process)."""
    present = [name for name in names if (root / name).is_dir()]
    if not present:
        return []
    single = run_tool(["check", "--format", "json", "-j", "1", *present], cwd=root)
    pooled = run_tool(["check", "--format", "json", *present], cwd=root)
    verdict = "under" if single.peak_mb < MEMORY_LIMIT_MB else "OVER"
    return [
        f"`check` over {' + '.join(present)}: -j 1 peak {single.peak_mb:.0f} MB in "
        f"{single.seconds:.1f} s ({verdict} the {MEMORY_LIMIT_MB} MB budget); default jobs: "
        f"largest process {pooled.peak_mb:.0f} MB in {pooled.seconds:.1f} s; exit codes "
        f"{single.returncode}/{pooled.returncode}."
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="*", default=list(PACKAGES), help="pip names")
    parser.add_argument("--offline", action="store_true", help="installed sources only")
    parser.add_argument(
        "--wheels", action="store_true", help="take what pip picks (wheels) instead of sdists"
    )
    parser.add_argument("--workdir", type=Path, help="keep the corpus here (default: temp)")
    parser.add_argument("--json", type=Path, help="also write the full report as JSON")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also sweep a local tree (repeatable), e.g. lightning-repo=/tmp/lightning-repo "
        "(git archive HEAD src tests examples of Lightning-AI/pytorch-lightning)",
    )
    args = parser.parse_args(argv)
    trees = [(spec.split("=", 1)[0], Path(spec.split("=", 1)[1])) for spec in args.tree]

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="amp-clipfix-sweep-"))
    root, pristine = workdir / "corpus", workdir / "pristine"
    if root.exists():
        shutil.rmtree(root)
    if pristine.exists():
        shutil.rmtree(pristine)
    root.mkdir(parents=True)
    pristine.mkdir(parents=True)
    corpora, skipped = build_corpus(
        root, pristine, args.packages, args.offline, prefer_sdist=not args.wheels, trees=trees
    )

    memory = memory_figure(root, INSTALLED)
    reports = []
    for name, source in corpora:
        print(f"sweeping {name} ...", file=sys.stderr)
        reports.append(sweep_corpus(name, source, root, pristine))

    out = io.StringIO()
    print(f"## Sweep ({time.strftime('%Y-%m-%d')}, amp-clipfix over real code)\n", file=out)
    print("\n".join(table(reports)), file=out)
    print("", file=out)
    for line in memory:
        print(line, file=out)
    for line in skipped:
        print(f"- skipped {line}", file=out)
    print("", file=out)
    print("\n".join(details(reports)), file=out)
    print(out.getvalue())
    if args.json:
        args.json.write_text(
            json.dumps(
                {"reports": [asdict(r) for r in reports], "memory": memory, "skipped": skipped},
                indent=2,
            )
        )
    print(f"corpus kept in {workdir}", file=sys.stderr)
    failed = any(r.crashes or r.unparsable or r.non_idempotent for r in reports)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
