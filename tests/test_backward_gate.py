"""ACF004 reads a function only where its reading may meet a scaled backward, or where a clip
of its own may be read in its callers (analysis/event_capable.py `BeforeClip.may_meet_backward`,
rules/acf004.py `own_clips`): the same findings as reading every function, on programs where
the backward hides in a helper, a method, two levels down, a helper handed on as a value, the
caller of a clip helper; and a training loop that can meet none (its project's only scaled
backward in a script's module code) is not read: the index of every event is never built."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from narrowed_search import compare_searches
from test_any_event import built
from test_clip_tail import report, write

from amp_clipfix.analysis import clip_tail, event_capable
from amp_clipfix.analysis.summary import summarise

LOOP = """
    import torch
    {imports}


    def train(model, optimizer, loader):
        scaler = torch.amp.GradScaler("cuda")
        for batch in loader:
            loss = model(batch).mean()
            {backward}
            {clip}
            scaler.step(optimizer)
            scaler.update()
    """
TORCH_CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
# ACF004 reads the modules that name torch's clip (its words): each helper module here has one.
CLIPPED = "\n\ndef clipped(model):\n    " + TORCH_CLIP + "\n"
SCALED = (
    "import torch\n\n\ndef scaled(scaler, loss):\n    scaler.scale(loss).backward()\n" + CLIPPED
)
# Also called with a GradScaler where it is written: its `scaler` may hold one as the classifier
# reads it (else no reading meets a backward and the search is not run: scaler_backwards.py).
CALLED_TOO = SCALED + '\n\ndef warm_up(loss):\n    scaled(torch.amp.GradScaler("cuda"), loss)\n'
TWICE = SCALED + "\n\ndef once(scaler, loss):\n    scaled(scaler, loss)\n"
CLIP_HELPER = "import torch\n\n\ndef clip(model):\n    " + TORCH_CLIP + "\n"

METHOD = """
    import torch


    class Trainer:
        def __init__(self):
            self.scaler = torch.amp.GradScaler("cuda")

        def backward_pass(self, loss):
            self.scaler.scale(loss).backward()

        def fit(self, model, optimizer, loader):
            for batch in loader:
                loss = model(batch).mean()
                self.backward_pass(loss)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                self.scaler.step(optimizer)
                self.scaler.update()
    """

# A benchmark script's module code is the project's only scaled backward (as kohya's
# sd-scripts have them): no function is read into it.
SCRIPT = """
    import torch

    if __name__ == "__main__":
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        loss = model(torch.randn(2, 4)).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
# A loop whose clip is a library's method spelled like torch's (no clip by value) and whose
# backward is the library's: nothing of it is a scaled backward.
ACCELERATED = """
    import torch


    def train(accelerator, model, optimizer, loader, lr_scheduler):
        for batch in loader:
            loss = model(batch).mean()
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            lr_scheduler.step()
    """


def loop(imports: str = "", backward: str = "", clip: str = TORCH_CLIP) -> str:
    return LOOP.format(imports=imports, backward=backward or "pass", clip=clip)


CLIPPER = """
    import torch


    class Clipper:
        def __call__(self, model):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    """


PROGRAMS: dict[str, dict[str, str]] = {
    "backward in the loop": {"train.py": loop(backward="scaler.scale(loss).backward()")},
    "backward in a helper": {
        "train.py": loop("from helpers import scaled", "scaled(scaler, loss)"),
        "helpers.py": SCALED,
    },
    "backward two helpers down": {
        "train.py": loop("from helpers import once", "once(scaler, loss)"),
        "helpers.py": TWICE,
    },
    "backward in a method": {"trainer.py": METHOD},
    "backward in a helper handed on as a value": {
        "train.py": loop(
            "from helpers import scaled", "run = scaled\n            run(scaler, loss)"
        ),
        "helpers.py": CALLED_TOO,
    },
    "backward in the caller of a clip helper": {
        "train.py": loop(
            "from helpers import clip", "scaler.scale(loss).backward()", "clip(model)"
        ),
        "helpers.py": CLIP_HELPER,
    },
    "backward in a nested function the loop does not call": {
        "train.py": loop(backward="def unused():\n                scaler.scale(loss).backward()"),
    },
    "backward in the loop, the clip in a helper": {
        "train.py": loop(
            "from helpers import clipped", "scaler.scale(loss).backward()", "clipped(model)"
        ),
        "helpers.py": SCALED,
    },
    "backward in a helper, the clip in a callable object": {
        "train.py": loop(
            "from helpers import scaled\n    from clipper import Clipper",
            "scaled(scaler, loss)",
            "Clipper()(model)",
        ),
        "helpers.py": SCALED,
        "clipper.py": CLIPPER,
    },
    "backward in the loop, the clip in a callable object": {
        "train.py": loop(
            "from clipper import Clipper", "scaler.scale(loss).backward()", "Clipper()(model)"
        ),
        "clipper.py": CLIPPER,
    },
    "backward only in a script's module code": {
        "bench.py": SCRIPT,
        "train.py": ACCELERATED,
    },
}
FOUND = [
    "backward in the loop",
    "backward in a helper",
    "backward two helpers down",
    "backward in a method",
    "backward in the caller of a clip helper",
]


def read_every_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reading may meet a backward (the search before this gate)."""
    monkeypatch.setattr(event_capable.BeforeClip, "may_meet_backward", lambda *arguments: True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_reading_every_function(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_searches(PROGRAMS[name], tmp_path, monkeypatch, read_every_function)


@pytest.mark.parametrize("name", FOUND)
def test_the_programs_are_findings(name: str, tmp_path: Path) -> None:
    """The comparison above means something: these report an unscaled clip."""
    write(tmp_path, PROGRAMS[name])
    assert "ACF004" in report(tmp_path)


def test_a_loop_that_can_meet_no_backward_is_not_read(tmp_path: Path) -> None:
    """The loop's clip-spelled call makes its first statement that may clip, so it was read
    (entering helpers through the index of every event); it meets no backward, and its own
    clip is no torch clip for its callers: neither index of its reading is built."""
    made: list[clip_tail.ClipCapable] = []
    original = clip_tail.ClipCapable.build

    def build(self: clip_tail.ClipCapable) -> None:
        original(self)
        made.append(self)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(clip_tail.ClipCapable, "build", build)
        write(tmp_path, PROGRAMS["backward only in a script's module code"])
        assert "ACF004" not in report(tmp_path)
    kinds = {type(index) for index in made}
    assert event_capable.BeforeClip in kinds
    assert event_capable.AnyEvent not in kinds


def test_the_index_of_backwards_is_closed_where_the_gate_reads_it(tmp_path: Path) -> None:
    """The gate answers from a built, closed index: a backward in a helper puts the helper in it;
    one handed on as a value opens it (every reading may then meet one)."""
    index = built(tmp_path / "a", PROGRAMS["backward two helpers down"], event_capable.BeforeClip)
    assert not index.open
    assert {f.node.name for f in index.levels[-1].values()} == {"scaled", "once", "train"}
    handed = PROGRAMS["backward in a helper handed on as a value"]
    assert built(tmp_path / "b", handed, event_capable.BeforeClip).open


# What the gate answers for each function ACF004 reads up to it (those that may clip).
ANSWERS = {
    "backward in the loop": {"train": True},
    "backward in a helper": {"train": True, "clipped": False},
    "backward two helpers down": {"train": True, "clipped": False},
    "backward in a method": {"fit": True},
    "backward in a helper handed on as a value": {"train": True, "clipped": True},
    "backward in the caller of a clip helper": {"clip": False},  # read in its caller
    "backward in a nested function the loop does not call": {"train": False},
    "backward in the loop, the clip in a helper": {"clipped": False},
    "backward only in a script's module code": {"train": False},
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_gate_s_answers(name: str, tmp_path: Path) -> None:
    """A reading may meet a backward where it writes one, or calls a function of the index (by
    its name, however many levels down); not through a nested function it never calls, nor a
    library's `backward`; every reading may where a helper is handed on as a value."""
    answers: dict[str, bool] = {}
    original = event_capable.BeforeClip.may_meet_backward

    def record(self: event_capable.BeforeClip, file: object, function: ast.AST) -> bool:
        answer = original(self, file, function)  # type: ignore[arg-type]
        answers[getattr(function, "name", "<module>")] = answer
        return answer

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(event_capable.BeforeClip, "may_meet_backward", record)
        write(tmp_path, PROGRAMS[name])
        report(tmp_path)
    assert answers == ANSWERS[name]


NESTED = """
    def train(scaler, loss, items):
        scaler.scale(loss).backward()
        [scaler.scale(x).backward() for x in items]
        if loss:
            scaler.scale(loss).backward()
        helper = lambda: scaler.scale(loss).backward()

        def inner():
            scaler.scale(loss).backward()

        class Inner:
            scaler.scale(loss).backward()

        return helper, inner, Inner


    scaler.scale(loss).backward()
    """


def test_a_call_is_a_function_s_own_where_no_function_lambda_or_class_is_between(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nested.py"
    text = textwrap.dedent(NESTED).lstrip()
    path.write_text(text)
    summary = summarise(tmp_path, path, text)
    assert summary is not None
    train = summary.tree.body[0]
    assert isinstance(train, ast.FunctionDef)
    calls = summary.calls("backward")
    assert [event_capable.made_by(summary, train, call) for call in calls] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert [event_capable.made_by(summary, summary.tree, call) for call in calls] == [
        False,
        False,
        False,
        False,
        False,
        False,
        True,
    ]


def test_the_sources_are_what_the_tests_say() -> None:
    """Each program parses (a test program with a slip would compare two empty reports)."""
    for files in PROGRAMS.values():
        for text in files.values():
            ast.parse(textwrap.dedent(text))
