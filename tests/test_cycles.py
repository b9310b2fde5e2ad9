"""A cycle settled once (analysis/cycles.py, issue 39): every member of a ring of mutually
recursive factories answers what a cold evaluation that starts from it answers, whichever
member the run asked first and whatever it asked before."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module
from test_evaluator_order import render
from test_recursion_ring import answers, ring

from amp_clipfix.models import Finding, Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET


def test_each_member_asked_first_answers_as_in_the_whole_run(tmp_path: Path) -> None:
    """A ring of nine entered with `True`, `False` and a run-time value: each member's `fused=`
    asked first of a fresh evaluator (its cold evaluation: the member is the cycle's head) is
    what it holds once every member was asked (the run's memo: the ring settled from
    whichever member came first), list for list."""
    source = ring(9, ("True", "False", "args.fused"))
    whole = answers(tmp_path / "whole", source, reverse=False)
    for line, shown in whole.items():
        alone = tmp_path / f"alone{line}"
        alone.mkdir()
        first = first_answer(alone, source, line)
        assert first == shown, line
    assert len(whole) == 9
    assert all(shown == ["Lit True", "Lit False", "Opaque 53"] for shown in whole.values())


def first_answer(folder: Path, source: str, line: int) -> list[str]:
    """The `fused=` answer at `line` of a fresh evaluator, asked before anything else."""
    evaluator, summary = one_module(folder, source)
    node = next(
        keyword.value
        for call in ast.walk(summary.tree)
        if isinstance(call, ast.Call) and call.lineno == line
        for keyword in call.keywords
        if keyword.arg == "fused"
    )
    return render(evaluator.ev(node, evaluator.ctx_of(summary, node)), evaluator)


def clipping_ring(count: int, entries: tuple[str, ...]) -> str:
    """`ring(count, entries)` whose every member also clips the optimizer it builds through a
    16-mixed Fabric: a finding per member, holding that member's `fused` values."""
    built = "        return torch.optim.AdamW(model.parameters(), fused=fused)"
    clipped = [
        "        optimizer = torch.optim.AdamW(model.parameters(), fused=fused)",
        '        L.Fabric(precision="16-mixed").clip_gradients(model, optimizer, max_norm=1.0)',
        "        return optimizer",
    ]
    return ring(count, entries).replace(built, "\n".join(clipped))


def shown(findings: list[Finding]) -> list[tuple[object, ...]]:
    """What the report says of each finding: code, confidence, message, review, and each site
    (kind, file, place, value, detail), in the report's order."""
    return [
        (
            f.code,
            f.confidence.value,
            f.message,
            f.review,
            tuple((s.kind.value, s.path.name, s.span, s.value, s.detail) for s in f.sites),
        )
        for f in findings
    ]


@pytest.mark.parametrize("reverse", [False, True])
def test_each_file_checked_alone_finds_what_the_project_finds(
    tmp_path: Path, reverse: bool
) -> None:
    """Four files, each a ring of its own (sizes 3 to 12, entered at one to three members with
    literals and run-time values), each member clipping its own optimizer (and `main` the
    last one it enters): the project's
    findings in each file (one run, the rings' members asked in the resolution's order, in
    a file order forward or reversed by name) are the findings of that file checked alone."""
    rings = {
        "a_ring.py": clipping_ring(3, ("True",)),
        "b_ring.py": clipping_ring(7, ("True", "args.fused")),
        "c_ring.py": clipping_ring(12, ("False", "args.fused", "True")),
        "d_ring.py": clipping_ring(5, ("False",)),
    }
    names = sorted(rings, reverse=reverse)
    project = tmp_path / "project"
    project.mkdir()
    for number, name in enumerate(names):
        (project / f"{number}_{name}").write_text(rings[name])
    result = run([project], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert not result.errors, result.errors
    for number, name in enumerate(names):
        file = f"{number}_{name}"
        alone = tmp_path / f"alone_{name}"
        alone.mkdir()
        (alone / file).write_text(rings[name])
        single = run([alone / file], Options(Strategy.AUTO, DEFAULT_TARGET))
        assert not single.errors, single.errors
        mine = [f for f in result.findings if f.primary.path.name == file]
        assert shown(mine) == shown(list(single.findings)), file
        assert len(mine) >= 2, file  # the members that may be fused clip it: findings
    found = {f.primary.path.name.split("_", 1)[1] for f in result.findings if f.code == "ACF001"}
    assert found == {"a_ring.py", "b_ring.py", "c_ring.py"}  # d is entered with False only
