"""`trace`'s mapping from a run's records to findings, with hand-written records (no torch), and
the tool's own process: it never imports torch or Lightning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.cli import main
from amp_clipfix.models import Confidence
from amp_clipfix.trace.findings import Run, observed
from amp_clipfix.trace.launch import read_records


def program(tmp_path: Path, lines: int = 30) -> str:
    path = tmp_path / "train.py"
    path.write_text("".join(f"line_{n} = print({n})\n" for n in range(1, lines + 1)))
    return str(path)


def frames(path: str, line: int) -> list[list[object]]:
    return [[path, line, "main"]]


def test_a_clip_of_scaled_gradients_is_acf004_with_what_the_step_got(tmp_path: Path) -> None:
    path = program(tmp_path)
    records = [
        {
            "event": "optimizer",
            "pid": 1,
            "id": 7,
            "cls": "SGD",
            "fused": False,
            "frames": frames(path, 4),
        },
        {
            "event": "clip",
            "pid": 1,
            "function": "clip_grad_norm_",
            "bound": 1.0,
            "optimizers": [7],
            "scalers": [{"scaler": 9, "scale": 65536.0, "stage": "READY"}],
            "manual_module": None,
            "total_norm": 3000.0,
            "frames": frames(path, 11),
        },
        {
            "event": "clip",
            "pid": 1,
            "function": "clip_grad_norm_",
            "bound": 1.0,
            "optimizers": [7],
            "scalers": [{"scaler": 9, "scale": 65536.0, "stage": "UNSCALED"}],
            "manual_module": None,
            "total_norm": 0.5,
            "frames": frames(path, 20),
        },
    ]
    [finding] = observed(Run(records))
    assert finding.code == "ACF004"
    assert finding.confidence is Confidence.OBSERVED
    assert [(site.path.name, site.span.line, site.span.column) for site in finding.sites] == [
        ("train.py", 11, 10)
    ]
    assert (finding.sites[0].span.end_line, finding.sites[0].span.end_column) == (11, 19)
    assert finding.notes[0] == (
        "observed: clip at train.py:11 on scaled gradients: scale 65536, max_norm 1, "
        "applied norm 1.53e-05 (meant 0.0458)"
    )
    assert "the optimizer: SGD built at train.py:4" in finding.notes


def test_the_loud_fabric_error_names_the_optimizer_the_clip_and_the_fabric(
    tmp_path: Path,
) -> None:
    path = program(tmp_path)
    records = [
        {
            "event": "fabric",
            "pid": 1,
            "plugin": "MixedPrecision",
            "precision": "16-mixed",
            "scaler": True,
            "frames": frames(path, 3),
        },
        {
            "event": "optimizer",
            "pid": 1,
            "id": 7,
            "cls": "AdamW",
            "fused": True,
            "frames": frames(path, 5),
        },
        {
            "event": "error",
            "pid": 1,
            "where": "fabric.clip_gradients",
            "type": "NotImplementedError",
            "message": "Gradient clipping is not implemented for "
            "optimizers handling the unscaling.",
            "frames": frames(path, 9),
        },
        {
            "event": "fabric_clip",
            "pid": 1,
            "optimizer": 7,
            "handles_unscaling": True,
            "max_norm": 1.0,
            "scaler": True,
            "error": "NotImplementedError",
            "frames": frames(path, 9),
        },
    ]
    [finding] = observed(Run(records))
    assert finding.code == "ACF001"
    assert [(site.kind.value, site.span.line) for site in finding.sites] == [
        ("fused-optimizer", 5),
        ("grad-clip", 9),
        ("fabric-precision", 3),
    ]
    assert finding.sites[0].detail == "AdamW(fused=True) built here"


def test_each_loud_error_has_its_code(tmp_path: Path) -> None:
    path = program(tmp_path)
    messages = {
        "ACF002": (
            "RuntimeError",
            "The current optimizer, AdamW, does not allow for gradient "
            "clipping because it performs unscaling of gradients internally.",
        ),
        "ACF009": (
            "MisconfigurationException",
            "Automatic gradient clipping is not supported "
            "for manual optimization. Remove `Trainer(gradient_clip_val=1.0)`",
        ),
        "ACF007": (
            "RuntimeError",
            "The total norm of order 2.0 for gradients from `parameters` "
            "is non-finite, so it cannot be clipped.",
        ),
        "ACF004": (
            "RuntimeError",
            "unscale_() has already been called on this optimizer since the last update().",
        ),
    }
    for line, (code, (kind, message)) in enumerate(messages.items(), start=2):
        record = {
            "event": "error",
            "pid": 1,
            "where": "fabric.clip_gradients",
            "type": kind,
            "message": message,
            "frames": frames(path, line),
        }
        assert [finding.code for finding in observed(Run([record]))] == [code]


def test_a_torch_clip_asked_to_raise_on_non_finite_is_no_finding(tmp_path: Path) -> None:
    record = {
        "event": "error",
        "pid": 1,
        "where": "clip_grad_norm_",
        "type": "RuntimeError",
        "message": "The total norm of order 2.0 ... is non-finite",
        "frames": frames(program(tmp_path), 3),
    }
    assert observed(Run([record])) == []


def test_fabric_clip_that_would_raise_on_overflow_says_to_force_one(tmp_path: Path) -> None:
    record = {
        "event": "fabric_clip",
        "pid": 1,
        "optimizer": 7,
        "max_norm": 1.0,
        "scaler": True,
        "error_if_nonfinite": True,
        "frames": frames(program(tmp_path), 8),
    }
    [finding] = observed(Run([record]))
    assert finding.code == "ACF007"
    assert "(`--overflow` forces one)" in finding.notes[0]


def test_plain_backward_in_manual_optimization_is_acf008_once(tmp_path: Path) -> None:
    path = program(tmp_path)
    module = {"cls": "Model", "file": path, "scaler": True}
    records = [
        {
            "event": "backward",
            "pid": 1,
            "via": "plain",
            "module": module,
            "frames": frames(path, 16),
        },
        {
            "event": "error",
            "pid": 1,
            "where": "unscale_",
            "type": "AssertionError",
            "message": "Attempted unscale_ but _scale is None.",
            "frames": frames(path, 17),
        },
    ]
    [finding] = observed(Run(records))
    assert (finding.code, finding.sites[0].span.line) == ("ACF008", 16)
    assert finding.notes[1] == "then AssertionError: Attempted unscale_ but _scale is None."


def test_a_trace_file_line_that_is_not_a_record_is_counted() -> None:
    records, bad = read_records('{"event": "stop"}\nnot json\n[1]\n\n')
    assert (records, bad) == ([{"event": "stop"}], 2)


def test_a_command_that_is_not_python_exits_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["trace", "--", "true"])
    assert result.exit_code == 2
    assert "the monitor saw no Python process in 'true'" in result.output


def test_a_command_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["trace", "--", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot run ")


def test_the_tool_process_never_imports_torch_or_lightning(tmp_path: Path) -> None:
    """A traced program that imports nothing heavy: the tool's own modules, from -X importtime,
    hold no torch and no Lightning whatever the program does."""
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    record = tmp_path / "run.jsonl"
    completed = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "amp_clipfix",
            "trace",
            "--record",
            str(record),
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in completed.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "amp_clipfix" in imported
    assert not {"torch", "lightning", "pytorch_lightning", "lightning_fabric"} & imported
    [process] = [json.loads(line) for line in record.read_text().splitlines()]
    assert process["event"] == "process" and process["argv"][-1] == str(script)


def test_observed_findings_are_valid_json_and_sarif(tmp_path: Path) -> None:
    """Confidence `observed` is in the JSON schema and in SARIF's properties; both documents
    validate (the SARIF one against the official 2.1.0 schema)."""
    import jsonschema

    from amp_clipfix.output.formats import to_json
    from amp_clipfix.output.machine import Summary
    from amp_clipfix.output.sarif import to_sarif
    from tests.test_formats import require_sarif_schema

    path = program(tmp_path)
    record = {
        "event": "fabric_clip",
        "pid": 1,
        "optimizer": 7,
        "max_norm": 1.0,
        "scaler": True,
        "error_if_nonfinite": True,
        "frames": frames(path, 8),
    }
    findings = observed(Run([record]))
    summary = Summary.from_findings(findings, 1, "2.6.6", "auto")
    document = json.loads(to_json(findings, summary))
    schema = json.loads(
        (Path(__file__).parent.parent / "src/amp_clipfix/output/schema.json").read_text()
    )
    jsonschema.validate(document, schema)
    assert document["findings"][0]["confidence"] == "observed"
    log = json.loads(to_sarif(findings, summary))
    jsonschema.validate(log, require_sarif_schema())
    [result] = log["runs"][0]["results"]
    assert (result["ruleId"], result["properties"]) == ("ACF007", {"confidence": "observed"})


def test_the_config_keys_behind_observed_values_are_named(tmp_path: Path) -> None:
    """The config files the run opened (the monitor's `config_file` records) are read for the
    keys whose values are the run's: by the key's last name and its value, nested paths named."""
    path = program(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        "trainer:\n"
        "  precision: 16  # Lightning's 16-mixed\n"
        "  gradient_clip_val: 0.5\n"
        "model:\n"
        "  fused: false\n"
        "optimizer:\n"
        "  init_args: {lr: 0.1, fused: !!bool true}\n"
        "not_fused: true\n"
    )
    data = tmp_path / "data.json"
    data.write_text('{"runs": [{"fused": true}], "precision": "bf16-mixed"}')
    broken = tmp_path / "broken.yaml"
    broken.write_text("fused: [true\n")
    records = [
        *({"event": "config_file", "pid": 1, "path": str(p)} for p in (config, data, broken)),
        {
            "event": "trainer",
            "pid": 1,
            "plugin": "MixedPrecision",
            "precision": "16-mixed",
            "scaler": True,
            "gradient_clip_val": 0.5,
            "frames": frames(path, 3),
        },
        {
            "event": "optimizer",
            "pid": 1,
            "id": 7,
            "cls": "AdamW",
            "fused": True,
            "frames": frames(path, 5),
        },
        {
            "event": "error",
            "pid": 1,
            "where": "trainer",
            "type": "RuntimeError",
            "message": "The current optimizer, AdamW, does not allow for gradient clipping "
            "because it performs unscaling of gradients internally.",
            "frames": frames(path, 9),
        },
        {
            "event": "module_clip",
            "pid": 1,
            "optimizer": 7,
            "error": "RuntimeError",
            "frames": frames(path, 9),
        },
    ]
    [finding] = observed(Run(records))
    assert finding.code == "ACF002"
    assert [
        (site.kind.value, site.path.name, site.span.line, site.span.column, site.detail)
        for site in finding.sites
        if site.in_config
    ] == [
        (
            "fused-optimizer",
            "config.yaml",
            7,
            37,  # the token after its tag: what a fix replaces
            "optimizer.init_args.fused: true (the config the run read)",
        ),
        ("fused-optimizer", "data.json", 1, 20, "runs.0.fused: true (the config the run read)"),
        (
            "trainer-precision",
            "config.yaml",
            2,
            13,
            "trainer.precision: 16 (the config the run read)",
        ),
        (
            "trainer-clip",
            "config.yaml",
            3,
            21,
            "trainer.gradient_clip_val: 0.5 (the config the run read)",
        ),
    ]


def test_the_monitor_notes_the_config_files_the_run_reads_under_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit hook, called as the interpreter calls it: each config file read under the
    program's folder once; files written, outside the folder, or not configs are not noted."""
    import os

    from amp_clipfix.trace.monitor import core

    record = tmp_path / "run.json"
    monkeypatch.setitem(core.RECORD, "path", str(record))
    monkeypatch.setitem(core.RECORD, "pid", os.getpid())
    monkeypatch.setattr(core, "CONFIG_ROOT", [str(tmp_path / "project") + os.sep])
    monkeypatch.setattr(core, "CONFIG_FILES", set())
    project = tmp_path / "project"
    calls = [
        ("open", (str(project / "config.yaml"), "r", 0)),
        ("open", (str(project / "config.yaml"), "rb", 0)),  # again: noted once
        ("open", (str(project / "data.json"), None, os.O_RDONLY)),
        ("open", (str(project / "out.json"), "w", 0)),
        ("open", (str(project / "log.yml"), None, os.O_WRONLY | os.O_CREAT)),
        ("open", (str(record), None, os.O_WRONLY | os.O_APPEND)),
        ("open", (str(tmp_path / "elsewhere.yaml"), "r", 0)),
        ("open", (str(project / "train.py"), "r", 0)),
        ("open", (3, "r", 0)),
        ("exec", (str(project / "x.yaml"),)),
    ]
    for event, args in calls:
        core.config_opened(event, args)
    core.flush()
    noted = [json.loads(line)["path"] for line in record.read_text().splitlines()]
    assert noted == [str(project / "config.yaml"), str(project / "data.json")]
