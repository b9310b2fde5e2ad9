"""The example rule of CONTRIBUTING.md "Adding a rule", end to end through the real CLI.

`tests/example_rule/acf900.py` is a complete rule that is not shipped: this test registers it in
`amp_clipfix.rules.RULES` (the one registry every command reads) for its own run only, and checks
what a user sees: the finding line of `check`, the fix `apply` writes, the `explain` page and the
rule and result in SARIF. Its fixtures have the layout of fixtures/ (input/, expected/,
case.json; a failing case and, in its rule's folder `ACF900/`, a passing one) but live here, so
tests/test_fixtures.py, which runs without the rule, never sees them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from example_rule import acf900
from fixture_cases import case_folders, case_id, load_case

from amp_clipfix import rules
from amp_clipfix.cli import main
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

FIXTURES = Path(__file__).resolve().parent / "example_rule" / "fixtures"
FIXTURE = FIXTURES / "fabric_clip_fused_bf16"
CASES = case_folders(FIXTURES)
CASE = json.loads((FIXTURE / "case.json").read_text(encoding="utf-8"))
FINDING_LINE = re.compile(r"^(\S.*?:\d+:\d+: ACF\d{3}) ")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def reported(output: str) -> list[str]:
    return [match.group(1) for line in output.splitlines() if (match := FINDING_LINE.match(line))]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture's input, as the current folder."""
    folder = tmp_path / "project"
    shutil.copytree(FIXTURE / "input", folder)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example rule in the registry, for this test only."""
    monkeypatch.setitem(rules.RULES, acf900.RULE.code, acf900.RULE)


def options() -> list[str]:
    return ["--strategy", CASE["strategy"], "--lightning-version", CASE["lightning_version"]]


def test_unregistered_the_example_is_not_shipped(project: Path) -> None:
    assert "ACF900" not in rules.RULES
    assert reported(invoke("check", *options(), ".").output) == []
    unknown = invoke("explain", "ACF900")
    assert unknown.exit_code == 2
    assert "unknown code 'ACF900'" in unknown.output


@pytest.mark.usefixtures("registered")
def test_check_shows_the_finding_with_its_pieces_and_fix(project: Path) -> None:
    result = invoke("check", *options(), ".")
    assert result.exit_code == 1, result.output
    assert reported(result.output) == CASE["findings"]
    assert f"ACF900 {acf900.MESSAGE}" in result.output
    for piece in (
        'precision: train.py:4 Fabric(precision="bf16-mixed")',
        "fused optimizer: train.py:6 torch.optim.AdamW(fused=True)",
        "clip: train.py:12 fabric.clip_gradients(...)",
        "fix (unfuse):",
    ):
        assert piece in result.output, result.output


@pytest.mark.usefixtures("registered")
def test_apply_writes_the_expected_project(project: Path) -> None:
    assert invoke("apply", "--yes", *options(), ".").exit_code == 0
    expected = FIXTURE / "expected"
    for path in expected.rglob("*.py"):
        assert (project / path.relative_to(expected)).read_bytes() == path.read_bytes()
    after = invoke("check", *options(), ".")
    assert reported(after.output) == CASE["remaining"]
    assert after.exit_code == 0


@pytest.mark.usefixtures("registered")
def test_explain_prints_the_rule_page() -> None:
    result = invoke("explain", "acf900")
    assert result.exit_code == 0
    assert result.output == rules.render_rule(acf900.RULE) + "\n"
    assert result.output.startswith("# ACF900\n\n`fabric-clip-fused-bf16`: ")
    assert "Gradient clipping is not implemented for optimizers handling the unscaling" in (
        result.output
    )
    assert acf900.BEFORE in result.output


@pytest.mark.usefixtures("registered")
def test_sarif_lists_the_rule_and_its_result_at_the_rule_level(project: Path) -> None:
    result = invoke("check", "--format", "sarif", *options(), ".")
    run = json.loads(result.output)["runs"][0]
    listed = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in listed] == sorted(rules.RULES)
    assert listed[-1]["id"] == "ACF900"
    rule = listed[-1]
    assert rule["name"] == "fabric-clip-fused-bf16"
    assert rule["shortDescription"]["text"] == acf900.RULE.short
    assert rule["defaultConfiguration"] == {"level": "warning"}
    assert rule["helpUri"].endswith("/docs/rules/ACF900.md")
    (finding,) = run["results"]
    assert (finding["ruleId"], finding["ruleIndex"], finding["level"]) == (
        "ACF900",
        sorted(rules.RULES).index("ACF900"),
        "warning",
    )
    assert finding["locations"][0]["physicalLocation"]["region"]["startLine"] == 6


@pytest.mark.usefixtures("registered")
def test_github_annotation_is_a_warning(project: Path) -> None:
    output = invoke("check", "--format", "github", *options(), ".").output
    assert output.startswith("::warning file=train.py,line=6,col=66,")
    assert "title=ACF900::" in output


@pytest.mark.usefixtures("registered")
def test_the_page_example_is_what_the_tool_finds_and_fixes(tmp_path: Path) -> None:
    """The page shows `example_before` and, as fixed by `auto`, `example_after`: both hold."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(acf900.RULE.example_before, encoding="utf-8")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET, fix=True))
    assert [finding.code for finding in result.findings] == ["ACF900"]
    assert [change.new_data.decode() for change in result.changes] == [acf900.RULE.example_after]


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("case", CASES, ids=[case_id(case, FIXTURES) for case in CASES])
def test_each_fixture_reports_what_it_expects(
    case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its failing case and its near miss (`ACF900/fabric_bf16_not_fused`: not fused)."""
    spec = load_case(case)
    shutil.copytree(case / "input", tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    result = invoke("check", "--lightning-version", spec["lightning_version"], ".")
    assert reported(result.output) == spec["findings"], result.output
    assert result.exit_code == (1 if spec["findings"] else 0)


def test_the_example_has_a_failing_and_a_passing_case() -> None:
    expected = [load_case(case)["findings"] for case in CASES]
    assert [] in expected and any(expected)
