"""Chains of parameters passed on walked with a worklist (analysis/passon.py, issue 39): a ring
of thousands of mutually recursive factories is settled once, with work linear in its size,
and answers what a small ring answers; a chain the worklist cannot settle alone is walked as
before, and the worklist answers what the walk that nests answers wherever both can."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module
from test_cycles import clipping_ring, first_answer, shown
from test_evaluator_order import render
from test_hostile_budget import findings_of
from test_recursion_ring import answers, ring

from amp_clipfix.analysis import frame, passon
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET


def asked_all(folder: Path, source: str) -> tuple[int, dict[int, list[str]]]:
    """Every `fused=` argument's values by line, asked in source order of one fresh evaluator,
    and the evaluations it cost."""
    folder.mkdir()
    evaluator, summary = one_module(folder, source)
    found = {}
    for node in ast.walk(summary.tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "fused":
                    ctx = evaluator.ctx_of(summary, keyword.value)
                    found[node.lineno] = render(evaluator.ev(keyword.value, ctx), evaluator)
    return frame.BUDGET - evaluator.budget, found


def test_a_ring_of_thousands_costs_linear_evaluations(tmp_path: Path) -> None:
    """Rings of 1,000 and 2,000 entered with `True` and a run-time value: every member's
    `fused=` holds both, and twice the members cost about twice the evaluations (the walk
    that nests was cut at about 450 members, never settled, and every question walked the
    ring again until the run's budget was spent)."""
    small, small_found = asked_all(tmp_path / "a", ring(1_000, ("True", "args.fused")))
    large, large_found = asked_all(tmp_path / "b", ring(2_000, ("True", "args.fused")))
    assert set(map(tuple, small_found.values())) == {("Lit True", f"Opaque {1_000 * 5 + 7}")}
    assert set(map(tuple, large_found.values())) == {("Lit True", f"Opaque {2_000 * 5 + 7}")}
    assert len(small_found) == 1_000 and len(large_found) == 2_000
    assert large <= 2.2 * small


def test_a_ring_of_a_thousand_finds_what_a_ring_of_fifty_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole run: the ring of 1,000 is fused and clipped under 16-mixed (ACF001 review:
    `fused` decided at run time; ACF007: the clip), as the ring of 50 is; before, the run's
    budget was spent and ACF007 lost."""
    _, small_found = findings_of(tmp_path / "a", ring(50), monkeypatch)
    _, large_found = findings_of(tmp_path / "b", ring(1_000), monkeypatch)
    assert small_found == large_found == [("ACF001", "review"), ("ACF007", "high")]


def test_each_member_of_a_large_ring_asked_first_answers_as_the_whole_run(
    tmp_path: Path,
) -> None:
    """A ring of 1,000 entered with `True`, `False` and a run-time value: the first, a middle
    and the last member's `fused=`, each asked first of a fresh evaluator (the chain's root),
    is what it holds once every member was asked, list for list."""
    source = ring(1_000, ("True", "False", "args.fused"))
    whole = answers(tmp_path / "whole", source, reverse=False)
    assert set(map(tuple, whole.values())) == {("Lit True", "Lit False", "Opaque 5008")}
    for line in (6, 2_501, 5_001):
        alone = tmp_path / f"alone{line}"
        alone.mkdir()
        assert first_answer(alone, source, line) == whole[line], line


def chain(count: int, entry: str = "True") -> str:
    """`make0` ... `make{count-1}`, each passing `fused` on to the next, the last building a
    fused AdamW: a chain with no cycle, entered once at `make0`."""
    lines = ["import lightning as L", "import torch", ""]
    for index in range(count - 1):
        lines += [
            f"def make{index}(model, fused):",
            f"    return make{index + 1}(model, fused)",
            "",
        ]
    lines += [
        f"def make{count - 1}(model, fused):",
        "    return torch.optim.AdamW(model.parameters(), fused=fused)",
        "",
        "def main(model, args):",
        '    fabric = L.Fabric(precision="16-mixed")',
        f"    optimizer = make0(model, {entry})",
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "",
    ]
    return "\n".join(lines)


def test_a_long_chain_keeps_the_value_it_is_entered_with(tmp_path: Path) -> None:
    """1,000 parameters passing `True` on: the last one's `fused=` is `True` (the walk that
    nests was cut at the nesting bound: decided at run time)."""
    _, found = asked_all(tmp_path / "chain", chain(1_000))
    assert found == {3 * 999 + 5: ["Lit True"]}


# Rings the walk that nests settles (cycles.py), and a ring it leaves as it is: a member that
# passes `fused or None` on (an expression, not a name: the worklist gives way to the walk).
SMALL = {
    "three entries": ring(9, ("True", "False", "args.fused")),
    "one entry": ring(4, ("True",)),
    "no entry": ring(4, ("True",)).split("def main")[0],
    "an expression": ring(9, ("True", "args.fused")).replace(
        "make4(model, fused, depth - 1)", "make4(model, fused or None, depth - 1)"
    ),
    "a chain": chain(12, "args.fused"),
}


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("reverse", [False, True])
def test_the_worklist_answers_as_the_walk_that_nests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, reverse: bool
) -> None:
    """Each small ring's answers, asked forward or in reverse: with DEEP lowered to 3 (every
    chain of more than one link walked by the worklist) what the walk that nests gives."""
    nested = answers(tmp_path / "nested", SMALL[name], reverse)
    monkeypatch.setattr(passon, "DEEP", 3)
    assert answers(tmp_path / "worklist", SMALL[name], reverse) == nested


def test_the_worklist_finds_in_a_project_what_the_walk_that_nests_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four files, each a ring whose members clip what they build (tests/test_cycles.py): the
    report's findings, finding for finding, with DEEP lowered to 3 and as it is."""
    project = tmp_path / "project"
    project.mkdir()
    rings = {
        "a_ring.py": clipping_ring(3, ("True",)),
        "b_ring.py": clipping_ring(7, ("True", "args.fused")),
        "c_ring.py": clipping_ring(12, ("False", "args.fused", "True")),
        "d_ring.py": clipping_ring(5, ("False",)),
    }
    for file, source in rings.items():
        (project / file).write_text(source)
    nested = run([project], Options(Strategy.AUTO, DEFAULT_TARGET))
    monkeypatch.setattr(passon, "DEEP", 3)
    worklist = run([project], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert not nested.errors and not worklist.errors
    assert shown(list(worklist.findings)) == shown(list(nested.findings))
    assert len(nested.findings) >= 8
