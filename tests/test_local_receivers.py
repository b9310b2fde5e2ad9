"""ACF004 asks its index of names (reach.CallReach), not the evaluator, what an attribute call on a
local a call gave may run (`ids = model.generate(...)`, then `ids[0].tolist()`) when no project
file writes the attribute's name other than as a method call: then no project function or
value can have that name, and following `model.generate` through a model's code is left out.
A name some file defines or gives a value is asked of the evaluator as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from narrowed_search import asked
from test_bounded import Counted
from test_clip_tail import report, write

from amp_clipfix.analysis import event_capable, reach

TRAIN = """
    import torch

    from model import build


    def train(loader, optimizer):
        model = build()
        scaler = torch.amp.GradScaler("cuda")
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).mean()
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            ids = model.generate(batch)
            ids[0].tolist()
            scaler.step(optimizer)
            scaler.update()
    """

MODEL = """
    class Model:
        def generate(self, batch):
            return self.decode(batch)

        def decode(self, batch):
            return [step for step in batch]


    def build():
        return Model()
    """

DEFINED = (
    MODEL
    + """

    class Tokens:
        def tolist(self):
            return []
    """
)


def files(model: str) -> dict[str, str]:
    return {"train.py": TRAIN, "model.py": model}


def every_call_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach.CallReach, "method_calls_only", lambda self, name: False)


@pytest.mark.parametrize("model", [MODEL, DEFINED], ids=["called only", "defined"])
def test_the_same_findings_as_asking_the_evaluator(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "index", files(model))
    write(tmp_path / "asked", files(model))
    indexed = report(tmp_path / "index")
    with monkeypatch.context() as patched:
        every_call_asked(patched)
        every = report(tmp_path / "asked")
    assert indexed == every
    assert "ACF004" in indexed


@pytest.mark.parametrize(("model", "evaluated"), [(MODEL, False), (DEFINED, True)])
def test_a_name_written_only_as_a_method_call_is_not_asked_of_the_evaluator(
    model: str, evaluated: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, files(model))
    with monkeypatch.context() as patched:
        # reach's index alone: event_capable.AnyEvent would leave `tolist` unasked either way
        # (no `tolist` can make an event: tests/test_any_event.py)
        patched.setattr(event_capable.AnyEvent, "build", every_helper)
        counted = Counted(patched)
        report(tmp_path)
    assert asked(counted, tmp_path / "train.py", "ids[0].tolist") is evaluated


def every_helper(index: event_capable.AnyEvent) -> None:
    index.built = index.open = True
