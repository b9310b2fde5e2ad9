"""A clip in a subclass's override of a framework method, read in its callers
(callables.caller_readings): the base's method that calls it on `self` runs it only for an
instance of the subclass, so the callers of that method (and of the methods calling it on
`self` in turn) are only the calls whose receiver may be one. Scripts each training their own
subclass are not read for the clip of another's; a receiver that may be one (either of two
classes, a subclass of the clipping class) still is. The findings are the same as reading
every caller. A script whose brain may be the clipping subclass reports its clip: its reading
enters `brain.fit` with `self` the class the call's receiver holds (analysis/entered.py; before
it, `self` was the base there and the subclass's clip was never met, no finding). Also: a
`**kwargs` spread of many dicts merges in linear time (frame.UniqueAdds)."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_clip_tail import report, write

from amp_clipfix.analysis import callables, frame
from amp_clipfix.analysis.frame import UniqueAdds, add_unique
from amp_clipfix.rules import acf004

FRAMEWORK = """
    import torch


    class Brain:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer
            self.scaler = torch.amp.GradScaler("cuda")

        def fit(self, data):
            for batch in data:
                self._train(batch)

        def _train(self, batch):
            self.fit_batch(batch)

        def fit_batch(self, batch):
            pass

        def clip(self):  # never called: the module names the clip (ACF004 reads such modules)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
    """

# the script runs the scaled backward and the step, the framework the subclass's clip between
SCRIPT = """
    {imports}


    {classes}


    def main(model, optimizer, data, clip):
        brain = {brain}
        loss = brain.model(data).mean()
        brain.scaler.scale(loss).backward()
        brain.fit(data)
        brain.scaler.step(optimizer)
    """

CLIPPING = SCRIPT.format(
    imports="import torch\n\n    from framework import Brain",
    classes="class ClipBrain(Brain):\n        def fit_batch(self, batch):\n"
    "            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)",
    brain="ClipBrain(model, optimizer)",
)


def other(index: int) -> str:
    return SCRIPT.format(
        imports="from framework import Brain",
        classes=f"class Other{index}(Brain):\n        def fit_batch(self, batch):\n"
        "            print(batch)",
        brain=f"Other{index}(model, optimizer)",
    )


# a script whose brain may be either, and one training a subclass of the clipping class
EITHER = SCRIPT.format(
    imports="from clip_brain import ClipBrain\n    from other0 import Other0",
    classes="",
    brain="ClipBrain(model, optimizer) if clip else Other0(model, optimizer)",
)

SUBCLASS = SCRIPT.format(
    imports="from clip_brain import ClipBrain",
    classes="class Deeper(ClipBrain):\n        pass",
    brain="Deeper(model, optimizer)",
)

OTHERS = 6


def project(extra: dict[str, str] | None = None) -> dict[str, str]:
    files = {"framework.py": FRAMEWORK, "clip_brain.py": CLIPPING}
    files.update({f"other{i}.py": other(i) for i in range(OTHERS)})
    files.update(extra or {})
    return files


def read_callers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The caller readings ACF004 makes, as `file:function`."""
    readings: list[str] = []
    search = acf004.caller_readings

    def recorded(*arguments: object, **keywords: object) -> Iterator[callables.Reading]:
        for reading in search(*arguments, **keywords):  # type: ignore[arg-type]
            readings.append(f"{reading[0].path.name}:{getattr(reading[1], 'name', '<module>')}")
            yield reading

    monkeypatch.setattr(acf004, "caller_readings", recorded)
    return readings


def every_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every caller is read, whatever its receiver (the search before the filter)."""
    monkeypatch.setattr(callables, "may_be_instance", lambda *arguments: True)


@pytest.mark.parametrize(
    "extra", [{}, {"either.py": EITHER}, {"deeper.py": SUBCLASS}], ids=["", "either", "deeper"]
)
def test_the_same_findings_as_reading_every_caller(
    extra: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "filtered", project(extra))
    write(tmp_path / "every", project(extra))
    filtered = report(tmp_path / "filtered")
    with monkeypatch.context() as patched:
        every_receiver(patched)
        every = report(tmp_path / "every")
    assert filtered == every


def test_the_scripts_training_another_subclass_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "filtered", project())
    write(tmp_path / "every", project())
    with monkeypatch.context() as patched:
        filtered = read_callers(patched)
        report(tmp_path / "filtered")
    with monkeypatch.context() as patched:
        every_receiver(patched)
        every = read_callers(patched)
        report(tmp_path / "every")
    assert sorted(filtered) == ["clip_brain.py:main", "framework.py:_train", "framework.py:fit"]
    others = {f"other{i}.py:main" for i in range(OTHERS)}
    assert others <= set(every)


@pytest.mark.parametrize(
    ("extra", "read"),
    [({"either.py": EITHER}, "either.py:main"), ({"deeper.py": SUBCLASS}, "deeper.py:main")],
)
def test_a_receiver_that_may_be_one_is_read(
    extra: dict[str, str], read: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, project(extra))
    with monkeypatch.context() as patched:
        readings = read_callers(patched)
        found = report(tmp_path)
    assert read in readings
    # its reading enters `fit` with the subclass it calls it on (see the docstring)
    assert "code='ACF004'" in found and "clip_brain.py'), span=Span(line=8," in found, found


def test_a_spread_of_many_dicts_merges_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """UniqueAdds gives add_unique's lists, with each value's key made once per add, not once
    per value already in the list at every add."""
    values = [frame.Opaque(ast.Constant(i), None) for i in range(300)]  # type: ignore[arg-type]
    spreads = [values[i : i + 40] for i in range(0, 300, 10)]
    expected: list[object] = []
    for items in spreads:
        add_unique(expected, items)
    made = 0
    key = frame.value_key

    def counted(value: object) -> object:
        nonlocal made
        made += 1
        return key(value)

    monkeypatch.setattr(frame, "value_key", counted)
    adds = UniqueAdds()
    target: list[object] = []
    for items in spreads:
        adds.add(target, items)
    assert target == expected
    assert made == sum(len(items) for items in spreads)


def test_the_programs_parse() -> None:
    for text in (FRAMEWORK, CLIPPING, other(0), EITHER, SUBCLASS):
        ast.parse(textwrap.dedent(text))
