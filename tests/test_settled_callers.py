"""ACF004 reads a clip helper's callers' callers only through a caller whose own code does not
settle every clip of the helper it meets (analysis/tail_callers.py `closes_clips`): the same
findings as reading through every caller, and the callers of a caller that settles them are
never looked for."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from narrowed_search import asked, compare_searches

from amp_clipfix.analysis.order import Event, EventKind
from amp_clipfix.analysis.tail_callers import closes_clips
from amp_clipfix.rules import acf004

# clip_all clips and leaves the step to its callers; train_step (the first level of its
# callers) runs {body}; loop (the second level) runs train_step between a backward and a step
# of the scaler `outer`, or of `scaler` itself.
HELPERS = """
    import torch


    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


    def finish(scaler, optimizer):
        scaler.step(optimizer)
        scaler.update()


    def train_step(model, optimizer, scaler, other, loss):
{body}
    """

LOOP = """
    import torch
    from helpers import train_step


    def loop(model, optimizer, data):
        scaler = torch.amp.GradScaler("cuda")
        other = torch.amp.GradScaler("cuda")
        outer = torch.amp.GradScaler("cuda")
        for batch in data:
            loss = model(batch).mean()
            {before}
            train_step(model, optimizer, scaler, other, loss)
            {after}
    """


def program(body: str, before: str = "pass", after: str = "outer.step(optimizer)") -> dict:
    return {
        "helpers.py": HELPERS.format(body=textwrap.indent(textwrap.dedent(body), " " * 8)),
        "train.py": LOOP.format(before=before, after=after),
    }


SETTLED = "scaler.scale(loss).backward()\nclip_all(model)\nscaler.step(optimizer)\n"

PROGRAMS: dict[str, dict[str, str]] = {
    # train_step's own backward and step settle the clip (a finding there, none above)
    "settled": program(SETTLED, "outer.scale(loss).backward()"),
    "settled, unscaled first": program(
        SETTLED.replace("clip_all", "scaler.unscale_(optimizer)\nclip_all"),
        "outer.scale(loss).backward()",
    ),
    # the step is another scaler's: the loop's step of the backward's scaler reports it there
    "the step of another scaler": program(
        "scaler.scale(loss).backward()\nclip_all(model)\nother.step(optimizer)",
        after="scaler.step(optimizer)",
    ),
    # the step in a helper of train_step: not its own call
    "the step in a helper": program(
        "scaler.scale(loss).backward()\nclip_all(model)\nfinish(scaler, optimizer)",
        "outer.scale(loss).backward()",
    ),
    # no backward in train_step: the loop's backward is the clip's
    "no backward of its own": program(
        "clip_all(model)\nscaler.step(optimizer)", "scaler.scale(loss).backward()", "pass"
    ),
    # a backward between the clip and the step
    "a backward between": program(
        "scaler.scale(loss).backward()\nclip_all(model)\nother.scale(loss).backward()\n"
        "scaler.step(optimizer)",
        "outer.scale(loss).backward()",
    ),
    # a second clip with no step after it
    "a clip after the step": program(
        SETTLED + "clip_all(model)", "outer.scale(loss).backward()", "outer.step(optimizer)"
    ),
}


FOUND = {
    "settled",  # in train_step
    "the step of another scaler",  # in the loop
    "the step in a helper",  # in train_step
    "a backward between",  # in train_step: the step after `other`'s backward is `scaler`'s
    "a clip after the step",
}


def every_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search before `closes_clips`: every caller's callers read."""
    monkeypatch.setattr(acf004, "closes_clips", lambda order, clips: False)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_reading_every_caller(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = compare_searches(PROGRAMS[name], tmp_path, monkeypatch, every_caller)
    assert ("ACF004" in compared.findings) == (name in FOUND)


def event(kind: EventKind, scaler: str | None = "s", via: int = 0, call: object = None) -> Event:
    calls = tuple(object() for _ in range(via))
    return Event(kind, call or object(), None, None, scaler, via=calls)  # type: ignore[arg-type]


def test_closes_clips_asks_own_backward_and_step_of_its_scaler() -> None:
    clip = object()
    b, c, s = EventKind.BACKWARD, EventKind.CLIP, EventKind.STEP
    assert closes_clips([event(b), event(c, None, 1, clip), event(s)], {id(clip)})
    assert not closes_clips([event(c, None, 1, clip), event(s)], {id(clip)})  # no backward
    assert not closes_clips([event(b), event(c, None, 1, clip)], {id(clip)})  # no step
    assert not closes_clips([event(b, via=1), event(c, None, 1, clip), event(s)], {id(clip)})
    assert not closes_clips([event(b), event(c, None, 1, clip), event(s, via=1)], {id(clip)})
    assert not closes_clips([event(b), event(c, None, 1, clip), event(s, "t")], {id(clip)})
    between = [event(b), event(c, None, 1, clip), event(b, "t"), event(s)]
    assert not closes_clips(between, {id(clip)})
    assert not closes_clips([event(b), event(s)], {id(clip)})  # no clip of the helper met
    other = object()
    assert closes_clips([event(b), event(c, None, 1, other), event(s)], {id(other)})
    assert not closes_clips(
        [event(b), event(c, None, 1, clip), event(s), event(c, None, 1, clip)], {id(clip)}
    )


# The settling caller's own callers are methods run through a parameter: looking for them
# evaluates `runner.model.fit` through every script.
RUNNER = """
    from helpers import train_step


    class Model:
        def fit(self, model, optimizer, scaler, other, loss):
            train_step(model, optimizer, scaler, other, loss)
            print(loss)


    class Loop:
        def run(self, runner, model, optimizer, scaler, other, loss):
            runner.model.fit(model, optimizer, scaler, other, loss)
            scaler.step(optimizer)
    """

SCRIPT = """
    from runner import Loop, Model


    class Runner{index}:
        def __init__(self):
            self.model = Model()


    def main{index}(*arguments):
        Loop().run(Runner{index}(), *arguments)
    """


def test_the_callers_of_a_settling_caller_are_not_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`train_step` settles `clip_all`'s clip: `Model.fit`, which calls it, is never looked
    for, so `runner.model.fit` is not evaluated; reading every caller evaluates it. The
    findings are the same. (train_step makes its scaler and optimizer: a parameter would be
    followed to its callers to learn what it holds.)"""
    own = (
        'own = torch.amp.GradScaler("cuda")\nsgd = torch.optim.SGD(model.parameters())\n'
        + SETTLED.replace("scaler", "own").replace("optimizer", "sgd")
    )
    files = {**program(own, "outer.scale(loss).backward()"), "runner.py": RUNNER}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(8)})
    compared = compare_searches(files, tmp_path, monkeypatch, every_caller)
    assert asked(compared.wider, tmp_path / "wider" / "runner.py", "runner.model.fit")
    assert not asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")
