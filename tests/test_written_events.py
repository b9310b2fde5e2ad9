"""ACF004's search is run only where some project file writes a scaled backward
(`<x>.scale(...).backward(...)`, analysis/written_events.py): its classifier makes a backward of
no other call, and each of its findings needs one. A project that makes a GradScaler and clips
but writes none (NeMo, the Lightning repository) asks nothing of its calls; the output is the
same as with the search run, and an edit that adds such a call runs it again."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from test_incremental import base_project, edit_line, same_as_cold
from test_reach import ENGINE, OPS, TRAIN

from amp_clipfix.analysis import written_events
from amp_clipfix.analysis.recording import scan
from amp_clipfix.analysis.written_events import writes_scaled_backward
from amp_clipfix.cli import main
from amp_clipfix.rules import acf004, acf006


@pytest.mark.parametrize(
    ("source", "writes"),
    [
        ("scaler.scale(loss).backward()\n", True),
        ("self.scaler.scale(loss * 2).backward(retain_graph=True)\n", True),
        ("(scaler.scale(loss)  # scaled\n .backward())\n", True),  # a comment between
        ("scaler.scale(loss) \\\n    .backward()\n", True),  # a continuation
        ("scaler.scale(loss). backward()\n", True),
        ("scaler.scale(loss).ｂackward()\n", True),  # NFKC: Python reads `backward`
        ("loss.backward()\nscaler.scale(x)\n", False),  # unscaled
        ("scaled = scaler.scale(loss)\nscaled.backward()\n", False),  # not the call shape
        ("model(x).backward()\nscale = 2\n", False),  # a call, not of `scale`
        ("scale(loss).backward()\n", False),  # a function, not a scaler's method
        ("s = 'scaler.scale(loss).backward()'\n", False),  # a string
        ("scaler.scale(loss).backward(\n", True),  # does not parse: it may
    ],
)
def test_what_writes_a_scaled_backward(source: str, writes: bool) -> None:
    assert writes_scaled_backward(Path("m.py"), source.encode()) is writes


UNSCALED = """\
import torch

scaler = torch.amp.GradScaler("cuda")


def log(loss):
    print(loss.item())


def step(model, optimizer, loss):
    loss.backward()
    log(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""


def searched(
    project: Path, monkeypatch: pytest.MonkeyPatch, rule: ModuleType, start: str, gate: str | None
) -> tuple[int, str, int]:
    """`check` over a project: its exit code, what it prints, and how many times the rule's
    search started (a call of its module's `start`); `gate`: its module's gate, made to say
    yes whatever the project writes."""
    started: list[object] = []
    starter = getattr(rule, start)

    def counted(facts):  # type: ignore[no-untyped-def]
        started.append(facts)
        return starter(facts)

    monkeypatch.setattr(rule, start, counted)
    if gate is not None:
        monkeypatch.setattr(rule, gate, lambda *_: True)
    monkeypatch.chdir(project)
    arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
    result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, len(started)


def check(project: Path, monkeypatch: pytest.MonkeyPatch, gate: bool) -> tuple[int, str, int]:
    """ACF004's search (its CallReach), gated or not (`any_scaler_backward`)."""
    return searched(
        project, monkeypatch, acf004, "CallReach", None if gate else "any_scaler_backward"
    )


def test_no_scaled_backward_no_search_and_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(UNSCALED, "utf-8")

    code, output, started = check(tmp_path, monkeypatch, gate=True)
    monkeypatch.undo()
    ungated = check(tmp_path, monkeypatch, gate=False)

    assert started == 0
    assert ungated[2] == 1  # the search ran, and found what the gate said: nothing
    assert (code, output) == ungated[:2]
    assert "ACF004" not in output


def test_an_edit_that_writes_the_first_scaled_backward_runs_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan is part of ACF004's query: a warm run after an edit prints a cold run's
    bytes, whether the edit removes the only scaled backward or writes it back."""
    project = base_project(tmp_path, monkeypatch, "True")
    first = same_as_cold(project)
    assert b"scaled.py:8:5: ACF004" in first
    edit_line("scaled.py", "scaler.scale(loss).backward()", "loss.backward()")(project)
    assert b"ACF004" not in same_as_cold(project)
    edit_line("scaled.py", "loss.backward()", "scaler.scale(loss).backward()")(project)
    assert same_as_cold(project) == first


def test_the_scan_reads_no_file_twice_and_parses_only_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a file holding `scale` and `).backward` is parsed (the rest is a text test)."""
    parsed: list[str] = []
    parse = written_events.ast.parse

    def counted(text, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(written_events.ast, "parse", counted)
    contents = {
        Path("a.py"): b"loss.backward()\n",
        Path("b.py"): b"scale = 2\nmodel(x).backward()\n",
        Path("c.py"): b"import torch\n",
    }
    assert not scan(contents, ("fn", written_events.SCALED_BACKWARD))
    assert parsed == [b"scale = 2\nmodel(x).backward()\n"]


@pytest.mark.parametrize(
    ("source", "hands_on"),
    [
        ("fabric.backward(loss)\nloss.backward()\n", False),
        ('"""Call .backward once."""\n# x.backward is called\n', False),  # text only
        ("step = fabric.backward\n", True),
        ("functools.partial(fabric.backward, loss)\n", True),
        ("run(fabric.backward)\n", True),
        ("x = fabric.ｂackward\n", True),  # NFKC
        ("x = fabric.backward\nif (\n", True),  # does not parse: it may
    ],
)
def test_what_hands_a_backward_on(source: str, hands_on: bool) -> None:
    assert written_events.hands_backward_on(Path("m.py"), source.encode()) is hands_on


@pytest.mark.parametrize(
    ("source", "with_arguments"),
    [
        ("fabric.backward(loss)\n", True),
        ("super().backward(*args, **kwargs)\n", True),
        ("fabric.backward(\n    loss,\n)\n", True),
        ("loss.backward()\n", False),
        ("loss.backward( )\n", False),
        ("def backward(ctx, grad):\n    return grad\n", False),  # a definition, no attribute
    ],
)
def test_what_calls_a_backward_with_arguments(source: str, with_arguments: bool) -> None:
    found = written_events.writes_backward_with_arguments(Path("m.py"), source.encode())
    assert found is with_arguments


FABRIC = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(precision="16-mixed")


class Module(torch.nn.Module):
    def backward(self, *args, **kwargs):
        super().backward(*args, **kwargs)


def step(model, optimizer, loss):
    {backward}
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""


def fabric_check(
    project: Path, monkeypatch: pytest.MonkeyPatch, gate: bool
) -> tuple[int, str, int]:
    """ACF006's search (its classifier), gated or not (`any_fabric_backward`)."""
    gated = None if gate else "any_fabric_backward"
    return searched(project, monkeypatch, acf006, "classifier", gated)


def test_no_fabric_backward_no_search_and_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Fabric is made and a clip follows a backward, but the backward is the loss's own and
    the only `backward(...)` with arguments is a module's `super()`: no Fabric's backward."""
    (tmp_path / "train.py").write_text(FABRIC.format(backward="loss.backward()"), "utf-8")

    code, output, started = fabric_check(tmp_path, monkeypatch, gate=True)
    monkeypatch.undo()
    ungated = fabric_check(tmp_path, monkeypatch, gate=False)

    assert started == 0
    assert ungated[2] == 1
    assert (code, output) == ungated[:2]
    assert "ACF006" not in output


@pytest.mark.parametrize(
    ("files", "rule", "finding"),
    [
        # The backward may be in a helper of another module (test_reach's project: engine.py
        # holds it, ops.py the clip, train.py the step): the scan reads every file.
        ({"ops.py": OPS, "engine.py": ENGINE, "train.py": TRAIN}, "ACF004", "engine.py:6:9"),
        ({"train.py": FABRIC.format(backward="fabric.backward(loss)")}, "ACF006", "train.py:13:5"),
    ],
)
def test_the_call_written_runs_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], rule: str, finding: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, "utf-8")

    code, output, started = (check if rule == "ACF004" else fabric_check)(
        tmp_path, monkeypatch, gate=True
    )

    assert started == 1
    assert code == 1, output
    assert f"{finding}: {rule}" in output


def test_a_fabric_backward_handed_on_runs_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`backward = fabric.backward; backward(loss)`: the classifier follows the value."""
    handed = "backward = fabric.backward\n    backward(loss)"
    (tmp_path / "train.py").write_text(FABRIC.format(backward=handed), "utf-8")

    code, output, started = fabric_check(tmp_path, monkeypatch, gate=True)
    monkeypatch.undo()
    ungated = fabric_check(tmp_path, monkeypatch, gate=False)

    assert started == 1
    assert (code, output) == ungated[:2]
