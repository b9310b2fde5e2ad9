"""Fixes that compose (issue 36): a fix another fix makes pointless is not made.

`apply --strategy bf16` on a Fabric program takes the GradScaler away; ACF007's
`error_if_nonfinite=False` exists for that scaler only, so the rewrite changes exactly the
precision line, whatever the file's bytes (newlines, encoding cookie, BOM).
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from tests.test_bytes_kept import BF16, expected_after, program

# The clip keeps Fabric's default (`error_if_nonfinite=True`): under fp16 that is ACF007's.
NO_KEYWORD = {b", error_if_nonfinite=False": b""}

BF16_CASES = {
    "plain": program(replace=NO_KEYWORD),
    "crlf": program([b"\r\n"], replace=NO_KEYWORD),
    "latin1_cookie": program(
        header=[b"# -*- coding: latin-1 -*-", b"# caf\xe9 na\xefve \xa9"],
        replace={**NO_KEYWORD, b"Linear(2, 2)": b'Linear(2, 2); name = "\xe9t\xe9"  # \xfc'},
    ),
    "bom": codecs.BOM_UTF8
    + program(replace={**NO_KEYWORD, b"Linear(2, 2)": "Linear(2, 2)  # café €".encode()}),
}


@pytest.mark.parametrize("case", sorted(BF16_CASES))
def test_bf16_changes_exactly_the_precision_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    original = BF16_CASES[case]
    (tmp_path / "pyproject.toml").write_bytes(b"[project]\nname = 'p'\n")
    path = tmp_path / "train.py"
    path.write_bytes(original)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    before = runner.invoke(main, ["check", "--lightning-version", "2.6.6", "train.py"])
    assert "ACF007" in before.output  # the keyword would be a fix under fp16
    result = runner.invoke(
        main,
        ["apply", "--yes", "--strategy", "bf16", "--lightning-version", "2.6.6", "train.py"],
        catch_exceptions=False,
    )

    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_after(original, BF16)
    after = runner.invoke(main, ["check", "--lightning-version", "2.6.6", "train.py"])
    assert after.exit_code == 0, after.output


REVIEW_FIXTURE = Path(__file__).resolve().parent.parent / (
    "fixtures/fabric_review_runtime_precision_auto_unscale/input"
)


def machine(format_: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(REVIEW_FIXTURE)
    result = CliRunner().invoke(main, ["check", "--format", format_, "--no-cache", "."])
    assert result.exit_code == 1, result.output
    return result.stdout


def test_severity_follows_confidence_in_every_machine_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A review ACF007 (the precision is decided at run time) is a warning, as a review ACF001
    is, though ACF007's level is error: a person decides, nothing is known to raise."""
    sarif = json.loads(machine("sarif", monkeypatch))
    levels = {(r["ruleId"], r["level"]) for r in sarif["runs"][0]["results"]}
    assert levels == {("ACF001", "warning"), ("ACF007", "warning")}
    github = machine("github", monkeypatch).splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::warning", "::warning"]
    rdjson = json.loads(machine("rdjson", monkeypatch))
    assert {(d["code"]["value"], d["severity"]) for d in rdjson["diagnostics"]} == {
        ("ACF001", "WARNING"),
        ("ACF007", "WARNING"),
    }
    gitlab = json.loads(machine("gitlab", monkeypatch))
    assert {(d["check_name"], d["severity"]) for d in gitlab} == {
        ("ACF001", "minor"),
        ("ACF007", "minor"),
    }


TWO_ROUNDS = Path(__file__).resolve().parent.parent / (
    "fixtures/trainer_amp_backend_and_manual_clip_val_two_rounds"
)


def two_rounds_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_bytes((TWO_ROUNDS / "input" / "train.py").read_bytes())
    monkeypatch.chdir(project)
    return project


def test_a_run_that_cannot_settle_says_so_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one round allowed, the fix that waited for an overlapping one cannot be made:
    nothing of the project is written, one line says why, exit 2."""
    import amp_clipfix.pipeline

    project = two_rounds_project(tmp_path, monkeypatch)
    original = (project / "train.py").read_bytes()
    monkeypatch.setattr(amp_clipfix.pipeline, "MAX_ROUNDS", 1)

    result = CliRunner().invoke(
        main, ["apply", "--yes", "--lightning-version", "2.6.6", "--no-cache", "."]
    )

    assert result.exit_code == 2, result.output
    assert "the fixes did not settle after 1 rounds" in result.output
    assert "nothing written for this project" in result.output
    assert (project / "train.py").read_bytes() == original


def test_stdin_reaches_the_fixpoint_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    two_rounds_project(tmp_path, monkeypatch)
    result = CliRunner().invoke(
        main,
        ["apply", "--lightning-version", "2.6.6", "--stdin-filename", "train.py", "-"],
        input=(TWO_ROUNDS / "input" / "train.py").read_bytes(),
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == (TWO_ROUNDS / "expected" / "train.py").read_bytes()


def test_json_lists_the_finding_a_later_round_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_rounds_project(tmp_path, monkeypatch)
    result = CliRunner().invoke(
        main, ["apply", "--yes", "--format", "json", "--lightning-version", "2.6.6", "."]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    findings = document["findings"] if isinstance(document, dict) else document
    assert sorted(f["code"] for f in findings if f.get("fixed")) == ["ACF009", "ACF010"]
