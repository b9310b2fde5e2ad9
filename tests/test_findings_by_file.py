"""fix_project's `fixing` of each changed file: the findings whose fix targets or edits it, in
the findings' order, each once (fixes/changes.py `findings_by_file`, one pass over the fixes
instead of one per changed file: 249 findings over 108 files on icefall)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from amp_clipfix.fixes.changes import findings_by_file

A, B, C = Path("a.py"), Path("b.py"), Path("c.py")


def finding(targets: tuple[Path, ...] = (), edits: tuple[Path, ...] = (), fixed: bool = True):  # noqa: ANN201
    fix = SimpleNamespace(
        targets=tuple(SimpleNamespace(path=p) for p in targets),
        edits=tuple(SimpleNamespace(path=p) for p in edits),
    )
    return SimpleNamespace(fix=fix if fixed else None)


def fixing(findings: list, path: Path) -> tuple:  # type: ignore[type-arg]
    """The expression fix_project asked of each changed file before."""
    return tuple(
        f
        for f in findings
        if f.fix is not None
        and (any(s.path == path for s in f.fix.targets) or any(e.path == path for e in f.fix.edits))
    )


def test_each_files_findings_in_order_and_once() -> None:
    findings = [
        finding(targets=(A,), edits=(A, B)),
        finding(edits=(B, B, C)),
        finding(targets=(A, C), fixed=False),
        finding(targets=(C,)),
        finding(edits=(A,)),
    ]
    by_file = findings_by_file(findings)  # type: ignore[arg-type]
    for path in (A, B, C, Path("d.py")):
        assert tuple(by_file.get(path, ())) == fixing(findings, path)
    assert [len(by_file[p]) for p in (A, B, C)] == [2, 2, 2]
