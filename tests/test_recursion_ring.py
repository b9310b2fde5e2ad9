"""Mutually recursive factories (issue 39): a ring of functions, each building a fused
optimizer from its `fused` parameter and calling the next with it, the last calling the first.

The answers must not depend on which question is asked first (a value a cycle cut short is
never remembered for the questions after it: frame.py `recall`). The cost is still about N
questions of N evaluations each (every question walks the whole ring anew): the linearity
test below is a strict xfail that records it, to be turned into a plain test by the change
that memoises a cycle once, order-independently (bench/README.md, "Hostile budget").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module
from test_evaluator_order import render
from test_hostile_budget import findings_of


def ring(count: int, entries: tuple[str, ...] = ("args.fused",)) -> str:
    """`make0` ... `make{count-1}`: each builds an optimizer with `fused=fused` and passes
    `fused` on to the next (the last to `make0`); `main` enters the ring at evenly spaced
    members, one entry per value in `entries`."""
    lines = ["import lightning as L", "import torch", ""]
    for index in range(count):
        lines += [
            f"def make{index}(model, fused, depth):",
            "    if depth <= 0:",
            "        return torch.optim.AdamW(model.parameters(), fused=fused)",
            f"    return make{(index + 1) % count}(model, fused, depth - 1)",
            "",
        ]
    lines += ["def main(model, args):", '    fabric = L.Fabric(precision="16-mixed")']
    step = max(count // len(entries), 1)
    for number, value in enumerate(entries):
        lines.append(f"    optimizer = make{number * step % count}(model, {value}, 10)")
    lines += ["    fabric.clip_gradients(model, optimizer, max_norm=1.0)", ""]
    return "\n".join(lines)


def answers(folder: Path, source: str, reverse: bool) -> dict[int, list[str]]:
    """Every `fused=` argument's values, by line, asked in source order or in reverse, of a
    fresh evaluator."""
    folder.mkdir()
    evaluator, summary = one_module(folder, source)
    asked = sorted(
        (node.lineno, keyword.value)
        for node in ast.walk(summary.tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "fused"
    )
    found = {}
    for line, node in reversed(asked) if reverse else asked:
        found[line] = render(evaluator.ev(node, evaluator.ctx_of(summary, node)), evaluator)
    return found


def test_a_ring_answers_the_same_whatever_member_is_asked_first(tmp_path: Path) -> None:
    """Three entries into a ring of nine (True, False, a run-time value): every member's
    `fused=` holds all three, and each member's answer (in its order) is the same whichever
    member was asked first."""
    source = ring(9, ("True", "False", "args.fused"))
    forward = answers(tmp_path / "forward", source, reverse=False)
    backward = answers(tmp_path / "backward", source, reverse=True)
    assert forward == backward
    assert len(forward) == 9
    for line, shown in forward.items():
        assert {"Lit False", "Lit True", f"Opaque {9 * 5 + 8}"} <= set(shown), line


def test_a_ring_entered_with_one_value_holds_that_value_only(tmp_path: Path) -> None:
    """A ring entered once, with `True`: every member's `fused=` is `True`, whichever is asked
    first. A member whose only caller is the member a question started from came back empty
    (that caller's value was cut as a cycle), was taken for an entry point called from
    outside, and every question but one said "decided at run time" at the next member."""
    source = ring(4, ("True",))
    forward = answers(tmp_path / "forward", source, reverse=False)
    backward = answers(tmp_path / "backward", source, reverse=True)
    assert forward == backward == {line: ["Lit True"] for line in (6, 11, 16, 21)}


def test_a_ring_no_one_calls_is_called_from_outside(tmp_path: Path) -> None:
    """Without `main`, the ring's functions are entry points: each question's answer is
    decided at run time (at the parameter of the member asked), in either order."""
    source = ring(4, ("True",)).split("def main")[0]
    forward = answers(tmp_path / "forward", source, reverse=False)
    backward = answers(tmp_path / "backward", source, reverse=True)
    assert forward == backward
    assert forward == {line: [f"Opaque {line - 2}"] for line in (6, 11, 16, 21)}


def test_a_ring_costs_linear_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four times the members, about four times the evaluations: the ring is settled once
    (analysis/cycles.py) and every member remembered (2,859 and 11,259; before: about 12
    times, 2.25 N**2: 7,759 and 90,859, and at 1,000 members the run's budget was spent and
    ACF007 lost)."""
    small, small_found = findings_of(tmp_path / "a", ring(50), monkeypatch)
    large, large_found = findings_of(tmp_path / "b", ring(200), monkeypatch)
    assert small_found == large_found == [("ACF001", "review"), ("ACF007", "high")]
    assert large <= 5 * small
