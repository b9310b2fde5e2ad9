"""ACF003 is an alias: a finding of ACF001 or ACF002 decided at run time keeps its own code with
confidence `review`, and `ACF003` names exactly those findings in `--select` / `--ignore`, the
configuration and suppression comments (fixtures/*_acf003 hold the comments); every output
format carries the rule's code with the review shown as a warning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amp_clipfix.cli import main

# A certain ACF001 (every piece a literal) and two review findings: ACF001 whose `fused` flag is
# read from the environment, ACF002 whose precision comes from the command line. The Fabric
# programs clip by value: a clip by norm would also be ACF007's (error_if_nonfinite).
CERTAIN = """\
import lightning as L
import torch

fabric = L.Fabric(precision="16-mixed")
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters(), fused=True)
model, optimizer = fabric.setup(model, optimizer)
fabric.clip_gradients(model, optimizer, clip_val=1.0)
"""
FABRIC_REVIEW = """\
import os

import lightning as L
import torch

fabric = L.Fabric(precision="16-mixed")
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters(), fused=os.environ.get("FUSED") == "1")
model, optimizer = fabric.setup(model, optimizer)
fabric.clip_gradients(model, optimizer, clip_val=1.0)
"""
TRAINER_REVIEW = """\
import sys

import lightning as L
import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=True)


L.Trainer(precision=sys.argv[1], gradient_clip_val=1.0).fit(Model())
"""
LINE = re.compile(r"^(\S+:\d+:\d+: ACF\d{3}) ")
ALL = ["certain.py:8:1: ACF001", "fabric_review.py:10:1: ACF001", "trainer_review.py:9:59: ACF002"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    for name, text in (
        ("certain.py", CERTAIN),
        ("fabric_review.py", FABRIC_REVIEW),
        ("trainer_review.py", TRAINER_REVIEW),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(
        main, [*args, "--lightning-version", "2.6.6", "--no-cache", "."], catch_exceptions=False
    )


def reported(result: Result) -> list[str]:
    return [m.group(1) for line in result.stdout.splitlines() if (m := LINE.match(line))]


def test_review_findings_keep_their_code_and_say_what_to_decide(project: Path) -> None:
    result = invoke("check")
    assert result.exit_code == 1, result.output
    assert reported(result) == ALL
    assert "ACF003" not in result.stdout
    assert "  review: whether the optimizer is fused is decided at run time" in result.stdout
    assert "  review: the precision is decided at run time" in result.stdout


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (("--select", "ACF003"), ALL[1:]),
        (("--ignore", "ACF003"), ALL[:1]),
        (("--select", "ACF001"), ALL[:2]),  # the rule's code reaches its review findings too
        (("--select", "ACF001", "--ignore", "ACF003"), ALL[:1]),
        (("--select", "ACF002,ACF003"), ALL[1:]),
        (("--ignore", "ACF002"), ALL[:2]),
    ],
)
def test_select_and_ignore_reach_review_findings_through_the_alias(
    project: Path, args: tuple[str, ...], kept: list[str]
) -> None:
    assert reported(invoke("check", *args)) == kept


def test_configuration_ignore_of_the_alias(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.amp-clipfix]\nignore = ["ACF003"]\n', encoding="utf-8"
    )
    assert reported(invoke("check")) == ALL[:1]


def test_machine_output_carries_the_code_and_the_review(project: Path) -> None:
    document = json.loads(invoke("check", "--format", "json").stdout)
    assert [(f["code"], f["confidence"]) for f in document["findings"]] == [
        ("ACF001", "high"),
        ("ACF001", "review"),
        ("ACF002", "review"),
    ]
    assert document["summary"]["by_code"] == {"ACF001": 2, "ACF002": 1}
    sarif = json.loads(invoke("check", "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], r["properties"]["confidence"]) for r in results] == [
        ("ACF001", "error", "high"),
        ("ACF001", "warning", "review"),
        ("ACF002", "warning", "review"),
    ]
    github = invoke("check", "--format", "github").stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::error", "::warning", "::warning"]
    assert all("title=ACF00" in line and "ACF003" not in line for line in github)


def test_explain_says_the_alias_reaches_the_review_findings() -> None:
    page = CliRunner().invoke(main, ["explain", "ACF003"]).output
    assert "An alias, not a finding of its own" in page
    assert "`# noqa: ACF003`" in page and "`--ignore ACF003`" in page


def test_the_review_names_the_same_pieces_whatever_order_the_ways_come_in() -> None:
    """Two Trainers meet one module class, each with two pieces decided at run time: the review
    names the same two (the first in `Piece` order) for both orders of the ways."""
    from amp_clipfix.analysis.link import PathPieces
    from amp_clipfix.models import Certainty, Site, SiteKind, Span
    from amp_clipfix.rules.clip_fused import found

    def site(kind: SiteKind, line: int, certainty: Certainty) -> Site:
        return Site(kind, Path("train.py"), Span(line, 0, line, 9), certainty, "detail")

    optimizer = site(SiteKind.FUSED_OPTIMIZER, 1, Certainty.KNOWN)
    runtime_precision = PathPieces(
        (site(SiteKind.TRAINER_PRECISION, 2, Certainty.RUNTIME),),
        (optimizer,),
        (site(SiteKind.TRAINER_CLIP, 3, Certainty.KNOWN),),
        clip_known=True,
        link_known=False,
    )
    runtime_clip = PathPieces(
        (site(SiteKind.TRAINER_PRECISION, 4, Certainty.KNOWN),),
        (optimizer,),
        (site(SiteKind.TRAINER_CLIP, 5, Certainty.RUNTIME),),
        clip_known=False,
        link_known=False,
    )
    first = found([runtime_precision, runtime_clip])
    assert first == found([runtime_clip, runtime_precision])
    assert (
        first.review == "the precision and which module the Trainer trains are decided at run time"
    )
    assert (
        first.condition
        == "the precision chosen at run time is mixed and the Trainer trains this module"
    )
