"""ACF004's search is run only where some call written `<x>.scale(...).backward(...)` may be a
scaled backward as its classifier sees one: `x` may hold a value a library GradScaler call
made (analysis/scaler_backwards.py `any_scaler_backward`). ColossalAI writes one, on its own copy
of torch's GradScaler class: the search (435 parses, 22,643 evaluations) found nothing there.

Every case compares the gated run with the search forced (the gate made to say yes): the same
exit code and the same text; the gate refuses only the project's own scaler class, and lets
through torch's however it reaches the backward (an alias, a name bound to the class, a
factory, a parameter, an attribute, a notebook); a subclass of torch's scaler written in the
project is read as the classifier reads it, with or without the gate. A warm run after an edit
that swaps the class a scaler is made of gives a cold run's bytes; an answer the evaluator's
budget cut lets the search run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evaluated import one_module
from test_incremental import edit_line, same_as_cold, write
from test_written_events import searched

from amp_clipfix.analysis import written_events
from amp_clipfix.analysis.clip_tail import INDEX_PARSES
from amp_clipfix.analysis.recording import holds, matches, passes
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.scaler_backwards import SCALE_CALL, any_scaler_backward
from amp_clipfix.analysis.scaler_calls import ScalerCalls
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.rules import acf004

# ColossalAI's legacy AMP: a project class written like torch's GradScaler, named so.
OWN_SCALER = '''\
class GradScaler:
    """A copy of torch.cuda.amp.GradScaler."""

    def __init__(self, init_scale=2.0**16):
        self.value = init_scale

    def scale(self, loss):
        return loss * self.value

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer):
        optimizer.step()

    def update(self):
        pass
'''

WRAPPER = """\
from ._grad_scaler import GradScaler


class AmpOptimizer:
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.scaler = GradScaler()

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def step(self):
        self.scaler.step(self.optimizer)
        self.scaler.update()
"""

# the scaled backward, the clip, the step: `{scaler}` says how the scaler is had
LOOP = """\
import torch
{imports}

def train(model, optimizer, batches):
    scaler = {scaler}
    for batch in batches:
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""

OWN = {
    "amp/__init__.py": "",
    "amp/_grad_scaler.py": OWN_SCALER,
    "amp/wrapper.py": WRAPPER,
    "train.py": LOOP.format(
        imports="from amp.wrapper import AmpOptimizer\n", scaler="AmpOptimizer(optimizer).scaler"
    ),
}

FACTORY = 'import torch\n\n\ndef new_scaler():\n    return torch.amp.GradScaler("cuda")\n'

PARAMETER_LOOP = """\
import torch


def fit(model, optimizer, scaler, batches):
    for batch in batches:
        loss = model(batch).sum()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""

LIBRARY = {
    "alias": {
        "train.py": LOOP.format(
            imports="from torch.cuda.amp import GradScaler as Scaler\n", scaler="Scaler()"
        )
    },
    "a name bound to the class": {
        "train.py": LOOP.format(imports="make = torch.amp.GradScaler\n", scaler='make("cuda")')
    },
    "a factory in another module": {
        "scalers.py": FACTORY,
        "train.py": LOOP.format(imports="from scalers import new_scaler\n", scaler="new_scaler()"),
    },
    "a parameter": {
        "loop.py": PARAMETER_LOOP,
        "main.py": (
            "import torch\nfrom loop import fit\n\n\ndef main(model, optimizer, batches):\n"
            '    fit(model, optimizer, torch.amp.GradScaler("cuda"), batches)\n'
        ),
    },
    "an attribute made with torch's class": {
        **OWN,
        "amp/wrapper.py": WRAPPER.replace(
            "from ._grad_scaler import GradScaler", "from torch.cuda.amp import GradScaler"
        ),
    },
}


def notebook(cells: list[str]) -> str:
    code = [
        {"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": 1}
        for text in cells
    ]
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


NOTEBOOK_CELLS = [
    'import torch\nscaler = torch.amp.GradScaler("cuda")\n',
    LOOP.format(imports="", scaler="scaler").replace("import torch\n", ""),
]


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        write(root, name, text)
    return root


def gated_and_forced(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[int, str, int], tuple[int, str, int]]:
    """`check` with the gate, then with the gate saying yes: exit code, output, searches."""
    gated = searched(root, monkeypatch, acf004, "CallReach", None)
    monkeypatch.undo()
    forced = searched(root, monkeypatch, acf004, "CallReach", "any_scaler_backward")
    return gated, forced


def test_the_projects_own_scaler_class_is_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ColossalAI's shape: the search does not start (it did on 0938ed9c), and reports what
    the forced search reports: nothing."""
    gated, forced = gated_and_forced(project(tmp_path, OWN), monkeypatch)
    assert gated[2] == 0
    assert forced[2] == 1
    assert gated[:2] == forced[:2]
    assert "ACF004" not in gated[1]


@pytest.mark.parametrize("case", sorted(LIBRARY))
def test_torchs_scaler_however_it_is_had_is_searched(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated, forced = gated_and_forced(project(tmp_path, LIBRARY[case]), monkeypatch)
    assert gated[2] == forced[2] == 1
    assert gated[:2] == forced[:2]
    assert gated[0] == 1 and "ACF004" in gated[1]


def test_a_notebooks_scaler_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"train.ipynb": notebook(NOTEBOOK_CELLS)}
    gated, forced = gated_and_forced(project(tmp_path, files), monkeypatch)
    assert gated[2] == forced[2] == 1
    assert gated[:2] == forced[:2]
    assert "train.ipynb" in gated[1] and "ACF004" in gated[1]


def test_a_project_subclass_of_torchs_scaler_is_read_as_the_classifier_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "scalers.py": "import torch\n\n\nclass Scaler(torch.amp.GradScaler):\n    pass\n",
        "train.py": LOOP.format(imports="from scalers import Scaler\n", scaler='Scaler("cuda")'),
    }
    gated, forced = gated_and_forced(project(tmp_path, files), monkeypatch)
    assert gated[:2] == forced[:2]
    # a subclass that defines none of torch's scaling methods is torch's scaler for the
    # classifier (scaler_calls.scaler_base): the gate lets its backward through
    assert gated[0] == 1 and "ACF004" in gated[1]


@pytest.mark.parametrize("swap", [False, True])
def test_an_edit_to_the_class_a_scaler_is_made_of_runs_the_search_again(
    swap: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only `amp/wrapper.py`'s import changes (the backward's file and the loop do not): a
    warm run gives a cold run's bytes, the finding appearing, then going again."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = project(tmp_path / "project", OWN)
    own, library = "from ._grad_scaler import GradScaler", "from torch.cuda.amp import GradScaler"
    if swap:
        edit_line("amp/wrapper.py", own, library)(root)
        own, library = library, own
    first = same_as_cold(root)
    assert (b"ACF004" in first) is swap
    edit_line("amp/wrapper.py", own, library)(root)
    assert (b"train.py:10:9: ACF004" in same_as_cold(root)) is not swap
    edit_line("amp/wrapper.py", library, own)(root)
    assert same_as_cold(root) == first


def test_an_answer_the_budget_cut_may_be_a_scaler(tmp_path: Path) -> None:
    """`scaler` in `fit` holds what 30 callers pass, each the project's own class: asked in
    full, no GradScaler; cut by a question budget of 5, the answer may hold more: it may."""
    callers = "".join(f"def caller{i}():\n    fit(Copy())\n\n\n" for i in range(30))
    source = (
        "class Copy:\n    def scale(self, loss):\n        return loss\n\n\n"
        "def fit(scaler, loss=None):\n    scaler.scale(loss).backward()\n\n\n" + callers
    )
    evaluator, _ = one_module(tmp_path, source)
    assert not any_scaler_backward(evaluator, ScalerCalls(evaluator))
    evaluator, _ = one_module(tmp_path, source)
    evaluator.question_limit = 5
    assert any_scaler_backward(evaluator, ScalerCalls(evaluator))


def test_past_the_index_parses_it_may(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project where more files than INDEX_PARSES write a scaled backward on the project's
    own class, none of them summarised before: the gate parses none of them and says the
    search may find something (its own index opens at that many); the search finds what the
    forced one finds. One file fewer: each is parsed and asked, and the search is left out."""
    files = {"amp/__init__.py": "", "amp/_grad_scaler.py": OWN_SCALER}
    for index in range(INDEX_PARSES + 1):
        files[f"amp/wrapper_{index}.py"] = WRAPPER
    root = project(tmp_path / "many", files)
    assert asked_of(root) == (True, 0)
    gated, forced = gated_and_forced(root, monkeypatch)
    assert gated == forced
    (root / "amp" / f"wrapper_{INDEX_PARSES}.py").unlink()
    assert asked_of(root) == (False, INDEX_PARSES)


def asked_of(root: Path) -> tuple[bool, int]:
    """The gate's answer over the project's modules, and the wrappers it summarised."""
    contents = {path: path.read_bytes() for path in sorted(root.rglob("*.py"))}
    evaluator = project_evaluator(root, contents, lambda p: summarise(root, p, p.read_text()))
    answer = any_scaler_backward(evaluator, ScalerCalls(evaluator))
    return answer, sum(1 for path in evaluator.summaries if path.name.startswith("wrapper_"))


@pytest.mark.parametrize(
    "source",
    [
        "scaler.scale(loss).backward()\n",
        "scaler . scale ( loss ) . backward ( )\n",
        "scaler.\\\n    scale(loss).backward()\n",
        "(scaler.  # the scaler\n    scale\n    (loss)).backward()\n",
        "(scaler.scale(loss)  # scaled\n .backward())\n",
        "scaler.ｓcale(loss).backward()\n",  # NFKC: Python reads `scale`
        "run = lambda s, l: s.scale(l).backward()\n",
    ],
)
def test_every_text_writing_a_scaled_backward_passes_the_text_test(source: str) -> None:
    """The gate's text test (`.scale(` and `).backward`, as Python reads the text) refuses no
    file whose tree holds the call: each of these parses to one."""
    data = source.encode()
    assert written_events.writes_scaled_backward(Path("m.py"), data)
    test = (holds(b"scale"), matches(written_events.AFTER_BRACKET), matches(SCALE_CALL))
    assert passes(test, data, Path("m.py"))


@pytest.mark.parametrize(
    "source", ["scaler.rescale(loss).backward()\n", "x.scale_factor(loss).backward()\n"]
)
def test_other_calls_spelled_near_it_do_not(source: str) -> None:
    assert not SCALE_CALL.search(source.encode())


@pytest.mark.parametrize(
    "call",
    [
        "scaler.scale(loss).backward()",
        "(scaler.scale(loss)  # scaled\n        .backward())",
        "scaler.scale(\n        loss\n    ).backward()",
        "scaler.\\\n        scale(loss).backward()",
        "[scaler.scale(x).backward() for x in loss]",
    ],
)
def test_the_gate_finds_the_call_however_it_is_spelled(call: str, tmp_path: Path) -> None:
    """Its tree's call, over lines, in brackets, behind a continuation, in a comprehension: the
    GradScaler is seen; the project's own class, written the same way, is not."""
    source = "import torch\n\n\ndef f(loss):\n    scaler = {made}\n    {call}\n"
    for made, may in (('torch.amp.GradScaler("cuda")', True), ("Copy()", False)):
        own = "class Copy:\n    def scale(self, loss):\n        return loss\n\n\n"
        evaluator, _ = one_module(tmp_path, own + source.format(made=made, call=call))
        assert any_scaler_backward(evaluator, ScalerCalls(evaluator)) is may
