"""A ring of mutually recursive factories that no call enters (issue 39): `main` builds its own
optimizer, and `make0` ... `make{N-1}` only call one another. Each member is then an entry point
called from outside (its `fused` decided at run time at its own parameter, whichever member is
asked first), and the ring is settled once by the worklist (analysis/passon.py) with work linear
in its size. Before, past about 450 members the worklist gave way to the walk that nests, every
question walked the ring again, the run's budget was spent (7 s for 200 members, 14.7 s for
1,000) and the report lost ACF007 and its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_bounded import Counted
from test_passon import asked_all
from test_recursion_ring import ring

from amp_clipfix.analysis import frame
from amp_clipfix.models import Finding, Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

ENTRY = "make0(model, args.fused, 10)"
OWN = "torch.optim.AdamW(model.parameters(), fused=args.fused)"


def unentered(count: int) -> str:
    """tests/test_recursion_ring.py `ring(count)` with `main` building its own optimizer."""
    source = ring(count)
    assert ENTRY in source
    return source.replace(ENTRY, OWN)


def shown(finding: Finding) -> tuple[object, ...]:
    """What the report shows of a finding, but the lines (they move with the ring's size):
    its code and confidence, whether it is fixed, why not, its sites' kinds and certainties."""
    sites = sorted({(site.kind.value, site.certainty.value) for site in finding.sites})
    return finding.code, finding.confidence.value, finding.resolved, finding.refusal, sites


def report(folder: Path, count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list]:
    """The run's findings as shown, and the evaluations it cost (as bench/ring.py counts)."""
    folder.mkdir()
    (folder / "train.py").write_text(unentered(count))
    counted = Counted(monkeypatch)
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert not result.errors, result.errors
    optimizers = [
        site
        for finding in result.findings
        for site in finding.sites
        if site.kind.value == "fused-optimizer"
    ]
    assert len(optimizers) == count + 1  # every member's optimizer and main's
    return counted.evaluations(), [shown(finding) for finding in result.findings]


def test_a_ring_of_600_no_call_enters_finds_what_a_ring_of_50_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACF001 (review: whether each optimizer is fused is decided at run time) and ACF007, both
    fixed by `unscale`, for 50 and for 600 members (600 lost ACF007, and ACF001's fix to "the
    clip's receiver is not known to be a Fabric", once the budget was spent)."""
    _, small = report(tmp_path / "a", 50, monkeypatch)
    _, large = report(tmp_path / "b", 600, monkeypatch)
    assert large == small
    assert [(code, confidence, fixed) for code, confidence, fixed, *_ in small] == [
        ("ACF001", "review", True),
        ("ACF007", "high", True),
    ]


def test_a_ring_no_call_enters_costs_linear_evaluations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twice the members cost about twice the evaluations, far from the run's budget (before,
    300 and 600 members both spent all of it: 400,000 evaluations; now about 16,000 and
    32,000)."""
    small, _ = report(tmp_path / "a", 300, monkeypatch)
    large, _ = report(tmp_path / "b", 600, monkeypatch)
    assert large <= 2.2 * small
    assert large < frame.BUDGET // 4


def test_each_member_of_a_ring_no_call_enters_is_its_own_entry_point(tmp_path: Path) -> None:
    """Every member's `fused=` of a ring of 600, asked in source order: decided at run time at
    its own parameter (line 5k + 4), as each member of a small ring answers asked first."""
    _, found = asked_all(tmp_path / "ring", unentered(600))
    members = {line: values for line, values in found.items() if line <= 600 * 5 + 1}
    assert members == {5 * k + 6: [f"Opaque {5 * k + 4}"] for k in range(600)}
