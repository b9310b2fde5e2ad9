"""Machine output of real runs: the JSON document against the schema the package ships, SARIF
against the official 2.1.0 schema (notebooks in file coordinates, failed files named,
fingerprints), reviewdog's rdjson against its documented format, GitLab code quality; and the
GitHub Action and example workflow against their published schemas."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from test_formats import require_sarif_schema

from amp_clipfix.cli import main
from amp_clipfix.rules import RULES

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample_project"
NOTEBOOK = REPO / "fixtures" / "notebook_trainer_unfuse" / "input" / "train.ipynb"
FABRIC_CODE, TRAINER_CODE = sorted(RULES)[:2]

# reviewdog's Diagnostic Format as documented in reviewdog/reviewdog, proto/rdf/reviewdog.proto
# (messages DiagnosticResult, Diagnostic, Location, Range, Position, Suggestion, Source, Code,
# enum Severity) and proto/rdf/README.md ("rdjson: JSON format of the DiagnosticResult
# message"; positions 1-based, end exclusive). Written from that documentation, not copied.
_POSITION = {
    "type": "object",
    "properties": {
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}
_RANGE = {
    "type": "object",
    "required": ["start"],
    "properties": {"start": _POSITION, "end": _POSITION},
    "additionalProperties": False,
}
_SEVERITY = {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]}
_LOCATION = {
    "type": "object",
    "required": ["path"],
    "properties": {"path": {"type": "string"}, "range": _RANGE},
    "additionalProperties": False,
}
_SOURCE = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
    "additionalProperties": False,
}
RDJSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "source": _SOURCE,
        "severity": _SEVERITY,
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message", "location"],
                "additionalProperties": False,
                "properties": {
                    "message": {"type": "string"},
                    "location": _LOCATION,
                    "severity": _SEVERITY,
                    "source": _SOURCE,
                    "code": {
                        "type": "object",
                        "required": ["value"],
                        "properties": {"value": {"type": "string"}, "url": {"type": "string"}},
                        "additionalProperties": False,
                    },
                    "suggestions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["range", "text"],
                            "properties": {"range": _RANGE, "text": {"type": "string"}},
                            "additionalProperties": False,
                        },
                    },
                    "original_output": {"type": "string"},
                    "related_locations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["location"],
                            "properties": {"message": {"type": "string"}, "location": _LOCATION},
                            "additionalProperties": False,
                        },
                    },
                },
            },
        },
    },
    "additionalProperties": False,
}

# GitLab code quality report: the fields GitLab documents as required for each issue
# (docs.gitlab.com, "Code Quality report format").
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string"},
            "check_name": {"type": "string"},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def invoke(*args: str):  # noqa: ANN201
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample project plus a notebook and a file that cannot be parsed."""
    root = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, root)
    shutil.copy(NOTEBOOK, root / "train.ipynb")
    (root / "broken.py").write_text("import torch\nopt = torch.optim.AdamW(fused=True\n")
    monkeypatch.chdir(tmp_path)
    return root


def shipped_schema() -> dict:
    printed = invoke("schema")
    assert printed.exit_code == 0
    return json.loads(printed.stdout)


def test_schema_command_prints_the_shipped_schema() -> None:
    schema = shipped_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["properties"]["schema_version"]["const"] == 3


def test_json_of_check_and_apply_validates_and_says_what_was_fixed(project: Path) -> None:
    validator = jsonschema.Draft7Validator(shipped_schema())
    checked = json.loads(invoke("check", "--format", "json", "sample_project").stdout)
    validator.validate(checked)
    assert checked["schema_version"] == 3
    # the sample's fp16 Fabric clip by norm is also ACF007's (an overflow step would raise)
    assert {f["code"] for f in checked["findings"]} == {FABRIC_CODE, TRAINER_CODE, "ACF007"}
    assert not any(f["fixed"] for f in checked["findings"])
    assert checked["errors"] == [
        {
            "path": "sample_project/broken.py",
            "kind": "parse",
            "line": 2,
            "column": 24,
            "message": checked["errors"][0]["message"],
        }
    ]
    assert "cannot parse" in checked["errors"][0]["message"]
    applied = invoke("apply", "--yes", "--format", "json", "sample_project")
    document = json.loads(applied.stdout)
    validator.validate(document)
    assert document["findings"] and all(f["fixed"] for f in document["findings"])
    assert applied.exit_code == 2  # the broken file is still an error


def sarif_of(*args: str) -> dict:
    return json.loads(invoke("check", "--format", "sarif", *args).stdout)


def test_sarif_of_a_real_run_validates_against_the_official_schema(project: Path) -> None:
    log = sarif_of("sample_project")
    jsonschema.Draft4Validator(require_sarif_schema()).validate(log)


def test_sarif_places_notebook_results_on_file_lines_with_the_cell_apart(project: Path) -> None:
    log = sarif_of("--strategy", "unfuse", "sample_project/train.ipynb")  # fixes the fused line
    (result,) = [
        r
        for r in log["runs"][0]["results"]
        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".ipynb")
    ]
    location = result["locations"][0]
    region = location["physicalLocation"]["region"]
    line = NOTEBOOK.read_text().splitlines()[region["startLine"] - 1]
    assert "fused=True" in line  # the .ipynb's own line, where the fix also points
    assert location["properties"]["cell"] == 2
    assert location["properties"]["cellRegion"]["startLine"] == 10
    replacement = result["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"]["startLine"] == region["startLine"]


def test_sarif_names_each_failed_file_and_fingerprints_results(project: Path) -> None:
    (project / "also_broken.ipynb").write_text("{not json")
    log = sarif_of("sample_project")
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    named = sorted(
        n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for n in invocation["toolExecutionNotifications"]
    )
    assert named == ["sample_project/also_broken.ipynb", "sample_project/broken.py"]
    prints = [r["partialFingerprints"]["ampClipfix/v1"] for r in log["runs"][0]["results"]]
    assert len(set(prints)) == len(prints) == 4  # ACF001 and ACF007 on one call: two prints
    # lines moving does not change a fingerprint
    model = project / "model.py"
    model.write_text("# a new first line\n" + model.read_text())
    moved = sarif_of("sample_project")["runs"][0]["results"]
    assert [r["partialFingerprints"]["ampClipfix/v1"] for r in moved] == prints
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in moved]
    before = [
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in log["runs"][0]["results"]
    ]
    assert lines != before


def test_rdjson_follows_reviewdogs_format_with_suggestions(project: Path) -> None:
    document = json.loads(
        invoke("check", "--format", "rdjson", "--strategy", "bf16", "sample_project").stdout
    )
    jsonschema.Draft7Validator(RDJSON_SCHEMA).validate(document)
    in_fabric = [
        d
        for d in document["diagnostics"]
        if d["location"]["path"] == "sample_project/train_fabric.py"
    ]
    # the clip by norm under fp16 is also ACF007's: one diagnostic, and no suggestion, since
    # bf16 leaves no GradScaler whose overflow steps error_if_nonfinite=False would let pass
    (nonfinite,) = [d for d in in_fabric if d["code"]["value"] == "ACF007"]
    assert "suggestions" not in nonfinite
    fabric = [d for d in in_fabric if d is not nonfinite]
    # one diagnostic per site (precision, optimizer, clip), each naming the other two
    assert len(fabric) == 3
    assert all(len(d["related_locations"]) == 2 for d in fabric)
    assert {d["code"]["value"] for d in fabric} == {FABRIC_CODE}
    assert {d["severity"] for d in fabric} == {"ERROR"}
    (carrier,) = [d for d in fabric if "suggestions" in d]
    (suggestion,) = carrier["suggestions"]
    # a whole line, the comment's own: GitHub's "Commit suggestion" replaces exactly it
    assert suggestion["range"] == {"start": {"line": 9}, "end": {"line": 9}}
    assert carrier["location"]["range"]["start"]["line"] == 9
    assert suggestion["text"] == '    fabric = L.Fabric(accelerator="cuda", precision="bf16-mixed")'
    for other in fabric:  # the comments on the other sites carry the whole fix as a patch
        if other is not carrier:
            assert "```diff\n--- a/sample_project/train_fabric.py\n" in other["message"]
            assert (
                '+    fabric = L.Fabric(accelerator="cuda", precision="bf16-mixed")\n'
                in (other["message"])
            )
    notebook = next(
        d for d in document["diagnostics"] if d["location"]["path"].endswith("train.ipynb")
    )
    line = NOTEBOOK.read_text().splitlines()[notebook["location"]["range"]["start"]["line"] - 1]
    assert "fused=True" in line


def test_rdjson_fix_in_two_places_is_one_patch_not_a_partial_suggestion(project: Path) -> None:
    """auto's unscale inserts a helper at the top and changes the clip call below: no single
    block holds both, so no diagnostic suggests half of it; each carries the whole patch."""
    document = json.loads(invoke("check", "--format", "rdjson", "sample_project").stdout)
    fabric = [
        d
        for d in document["diagnostics"]
        if d["location"]["path"] == "sample_project/train_fabric.py"
    ]
    assert fabric and not any("suggestions" in d for d in fabric)
    for diagnostic in fabric:
        message = diagnostic["message"]
        assert "+def clip_gradients_unscaled(" in message
        assert "+        clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)" in message
        assert "-        fabric.clip_gradients(model, optimizer, max_norm=1.0)" in message


def test_rdjson_columns_are_utf8_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reviewdog counts columns in UTF-8 bytes: `é` and `𐐀` before a site move it by 2 and 4."""
    (tmp_path / "train.py").write_text(
        "import lightning as L\nimport torch\nfrom torch import nn\n\n"
        'fabric = L.Fabric(precision="16-mixed")\nmodel = nn.Linear(8, 8)\n'
        "é𐐀 = torch.optim.AdamW(model.parameters(), fused=True)\n"
        "model, opt = fabric.setup(model, é𐐀)\n"
        "fabric.clip_gradients(model, opt, max_norm=1.0)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    document = json.loads(invoke("check", "--format", "rdjson", "--strategy", "unfuse", ".").stdout)
    ranges = [
        d["location"]["range"]
        for d in document["diagnostics"]
        if d["location"]["range"]["start"]["line"] == 7
    ]
    (fused,) = ranges
    line = "é𐐀 = torch.optim.AdamW(model.parameters(), fused=True)".encode()
    start = line.index(b"True") + 1
    assert fused == {
        "start": {"line": 7, "column": start},
        "end": {"line": 7, "column": start + len(b"True")},
    }
    assert start == line.decode().index("True") + 1 + 4  # é: 1 byte more, 𐐀: 3 more


def test_gitlab_code_quality_report(project: Path) -> None:
    issues = json.loads(
        invoke("check", "--format", "gitlab", "--strategy", "bf16", "sample_project").stdout
    )
    jsonschema.Draft7Validator(GITLAB_SCHEMA).validate(issues)
    assert len({issue["fingerprint"] for issue in issues}) == len(issues) == 4  # + ACF007
    assert sorted(issue["check_name"] for issue in issues) == [
        FABRIC_CODE,
        TRAINER_CODE,
        "ACF002",
        "ACF007",
    ]
    fabric = next(i for i in issues if i["location"]["path"].endswith("train_fabric.py"))
    assert fabric["check_name"] == FABRIC_CODE and fabric["location"]["lines"]["begin"] == 9
    assert fabric["severity"] == "major"


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("vendor.github-actions", REPO / "action.yml"),
        ("vendor.github-workflows", REPO / "examples" / "github-workflow.yml"),
    ],
)
def test_action_and_example_workflow_validate(schema: str, path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_docs_workflow_is_the_example_file() -> None:
    page = (REPO / "docs" / "integrations" / "github-action.md").read_text(encoding="utf-8")
    example = (REPO / "examples" / "github-workflow.yml").read_text(encoding="utf-8")
    assert example in page


def test_a_notebook_cell_stored_as_one_string_maps_to_that_strings_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nbformat allows a cell's source as one string: every cell line is on the file line of
    that string."""
    shutil.copytree(REPO / "fixtures" / "notebook_source_as_one_string" / "input", tmp_path / "nb")
    monkeypatch.chdir(tmp_path)
    (result,) = sarif_of("--strategy", "unfuse", "--ignore", "ACF011", "nb")["runs"][0]["results"]
    location = result["locations"][0]
    assert location["physicalLocation"]["region"]["startLine"] == 17
    assert location["properties"]["cellRegion"]["startLine"] == 3
    related = {r["physicalLocation"]["region"]["startLine"] for r in result["relatedLocations"]}
    assert related == {17}


def described_keys(schema: dict, node: dict) -> set[str] | None:
    """The keys `node` (a schema object) names, following `allOf` and `$ref`; None when the object
    is a free map (`additionalProperties` is a schema, as in `by_code`)."""
    if "$ref" in node:
        node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
    if isinstance(node.get("additionalProperties"), dict):
        return None
    keys = set(node.get("properties", {}))
    for part in node.get("allOf", []):
        keys |= described_keys(schema, part) or set()
    return keys


def sub_schemas(schema: dict, node: dict, key: str) -> list[dict]:
    """The schemas a value under `key` may match (a `oneOf` gives each of its branches)."""
    if "$ref" in node:
        node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
    found = [node["properties"][key]] if key in node.get("properties", {}) else []
    for part in node.get("allOf", []):
        found += sub_schemas(schema, part, key)
    return found


def undescribed(schema: dict, node: dict, value: object, where: str = "$") -> list[str]:
    """Every key of `value` that the schema does not describe (it stays open to new keys for
    consumers; this keeps it honest for us)."""
    if "oneOf" in node:  # the branches that fit the value's JSON type; the best one counts
        fitting = [b for b in node["oneOf"] if (b.get("type") == "null") == (value is None)]
        return min((undescribed(schema, b, value, where) for b in fitting), key=len)
    if "$ref" in node:
        node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
    if isinstance(value, list):
        return [
            m
            for i, v in enumerate(value)
            for m in undescribed(schema, node["items"], v, f"{where}[{i}]")
        ]
    if not isinstance(value, dict):
        return []
    keys = described_keys(schema, node)
    if keys is None:
        return []
    missing = [f"{where}.{key}" for key in value if key not in keys]
    for key, child in value.items():
        for part in sub_schemas(schema, node, key):
            missing += undescribed(schema, part, child, f"{where}.{key}")
    return missing


REAL_RUNS = [
    ("sample_project", ()),
    ("sample_project", ("--strategy", "unscale")),
    ("fixtures/fabric_review_runtime_precision_auto_unscale/input", ()),
    ("fixtures/fabric_fsdp_unscale_refused_auto_unfuses/input", ("--strategy", "unscale")),
    ("fixtures/pin_setup_cfg_1_9_5_trainer_bf16_unfuse/input", ("--strategy", "unscale")),
    ("fixtures/notebook_trainer_unfuse/input", ()),
]


@pytest.mark.parametrize(("path", "extra"), REAL_RUNS, ids=lambda v: "-".join(v) or "auto")
def test_every_key_of_real_json_output_is_described(
    project: Path, path: str, extra: tuple[str, ...]
) -> None:
    """Real `--format json` output (the unscale fix, a refusal, a review finding, a project pin,
    a notebook) validates, and the schema describes every key it contains: `applicability` and
    whatever the next feature adds must be documented, not merely tolerated."""
    target = path if path == "sample_project" else str(REPO / path)
    schema = shipped_schema()
    document = json.loads(invoke("check", "--format", "json", *extra, target).stdout)
    jsonschema.Draft7Validator(schema).validate(document)
    assert document["findings"], "each run should report something to check"
    assert undescribed(schema, schema, document) == []


def test_rdjson_never_passes_a_partial_fix_as_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """guard wraps one of two clip calls: each comment says what stays for a person."""
    case = REPO / "fixtures" / "fabric_guard_partial_some_clips_unguardable"
    shutil.copytree(case / "input", tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    args = ["--strategy", "guard", "--lightning-version", "2.6.6", "."]
    document = json.loads(invoke("check", "--format", "rdjson", *args).stdout)
    # ACF007's keyword on each clip call is a whole fix of its own; ACF001's guard is partial
    by_code: dict[str, list[dict]] = {}
    for diagnostic in document["diagnostics"]:
        by_code.setdefault(diagnostic["code"]["value"], []).append(diagnostic)
    assert sorted(by_code) == ["ACF001", "ACF007"] and len(by_code["ACF007"]) == 2
    for diagnostic in by_code["ACF007"]:
        assert "The fix is partial" not in diagnostic["message"]
    for diagnostic in by_code["ACF001"]:
        message = diagnostic["message"]
        assert "The fix is partial: left for a person: train.py:13 fabric.clip_gradients" in message
