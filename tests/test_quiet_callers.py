"""ACF004 reads a caller of a clip helper one statement at a time from the one calling it, only
as far as it takes to know that none of the helper's clips met through the call can be
reported (analysis/tail_callers.py `reports_none`): the same findings as reading it whole, and
what comes after a clip settled in its own statement or by the next backward is not asked
about."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_clip_tail
import test_settled_callers
import test_tail_callers
from narrowed_search import asked, compare_searches
from test_clip_tail import report, write

from amp_clipfix.analysis import tail_callers
from amp_clipfix.rules import acf004

PROGRAMS: dict[str, dict[str, str]] = {
    **{f"clip_tail: {k}": v for k, v in test_clip_tail.PROGRAMS.items()},
    **{f"tail_callers: {k}": v for k, v in test_tail_callers.PROGRAMS.items()},
    **{f"settled: {k}": v for k, v in test_settled_callers.PROGRAMS.items()},
}

# update runs a backward, clips through clip_all and leaves the step to its callers: the loops
# calling update are the second level of clip_all's callers. clip_all is also a value, so any
# call may clip (clip_tail's index is open) and update is read whole wherever it is entered.
HELPERS = """
    import torch


    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


    CLIPPERS = [clip_all]


    def update(model, scaler, loss):
        scaler.scale(loss).backward()
        clip_all(model)
    """


def loop(body: str) -> dict[str, str]:
    made = 'scaler = torch.amp.GradScaler("cuda")\nother = torch.amp.GradScaler("cuda")\n'
    body = body.replace("UPDATE", "update(model, scaler, loss)")
    lines = "\n".join(f"        {line}" for line in (made + body).splitlines())
    return {
        "helpers.py": HELPERS,
        "train.py": f"""
    import torch
    from helpers import update


    def loop(model, optimizer, loss):
{lines}
    """,
    }


CALLERS: dict[str, dict[str, str]] = {
    "a step after": loop("UPDATE\nscaler.step(optimizer)"),
    "the next backward first": loop(
        "UPDATE\nscaler.scale(loss).backward()\nscaler.step(optimizer)"
    ),
    "another scaler's backward first": loop(
        "UPDATE\nother.scale(loss).backward()\nscaler.step(optimizer)"
    ),
    "the step in the same statement": loop(
        "print(UPDATE, scaler.step(optimizer))\nscaler.step(optimizer)"
    ),
    "another scaler's step in the same statement": loop(
        "print(UPDATE, other.step(optimizer))\nscaler.step(optimizer)"
    ),
    "no step": loop("UPDATE\nprint(loss)"),
    "in a loop, the step first": loop(
        "for batch in loss:\n    scaler.step(optimizer)\n    update(model, scaler, batch)"
    ),
    "itself again after": loop(
        "UPDATE\nif loss:\n    loop(model, optimizer, None)\nscaler.step(optimizer)"
    ),
    "itself again before": loop(
        "if loss:\n    loop(model, optimizer, None)\n    scaler.step(optimizer)\n"
        "UPDATE\nscaler.scale(loss).backward()"
    ),
}
CALLERS_FOUND = {
    "a step after",
    "another scaler's backward first",
    "another scaler's step in the same statement",
}


def whole_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search before `reports_none`: every caller read whole."""
    monkeypatch.setattr(acf004, "reports_none", lambda *arguments: False)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_whole_readings(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_searches(PROGRAMS[name], tmp_path, monkeypatch, whole_readings)


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_second_level_callers(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compared = compare_searches(CALLERS[name], tmp_path, monkeypatch, whole_readings)
    assert ("ACF004" in compared.findings) == (name in CALLERS_FOUND)


def closed_answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, bool]]:
    """Each answer of `closed_to_itself`: the reading's function, the level of the helper's
    clip below the call it was entered at, the answer."""
    answers: list[tuple[str, int, bool]] = []
    closed = tail_callers.closed_to_itself

    def noted(capable, file, function, level):  # noqa: ANN001, ANN202
        answer = closed(capable, file, function, level)
        answers.append((function.name, level, answer))
        return answer

    monkeypatch.setattr(tail_callers, "closed_to_itself", noted)
    return answers


@pytest.mark.parametrize(
    ("name", "closed"),
    [
        ("the next backward first", True),
        ("itself again after", False),  # a call spelled with its own name
        ("itself again before", False),
    ],
)
def test_a_reading_that_may_enter_itself_is_read_whole(
    name: str, closed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, CALLERS[name])
    answers = closed_answers(monkeypatch)
    report(tmp_path)
    assert ("loop", 2, closed) in answers


def test_a_clip_helper_called_directly_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first-level caller may enter itself through any helper it calls: not closed."""
    files = loop("scaler.scale(loss).backward()\nclip_all(model)\nscaler.scale(loss).backward()")
    files["train.py"] = files["train.py"].replace("import update", "import clip_all")
    write(tmp_path, files)
    answers = closed_answers(monkeypatch)
    report(tmp_path)
    assert ("loop", 1, False) in answers


RUNNER = """
    import torch
    from helpers import update


    class Model:
        def fit(self, optimizer):
            optimizer.step(1)


    class Loop:
        def run(self, runner, model, optimizer, loss):
            scaler = torch.amp.GradScaler("cuda")
            update(model, scaler, loss)
            scaler.scale(loss).backward()
            runner.model.fit(optimizer)
            scaler.step(optimizer)
    """

SCRIPT = """
    import torch
    from runner import Loop, Model


    class Runner{index}:
        def __init__(self):
            self.model = Model()


    def main{index}(*arguments):
        Loop().run(Runner{index}(), torch.nn.Linear(1, 1), *arguments)
    """


def test_what_follows_the_next_backward_is_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Loop.run` backs a loss again right after `update`: update's clip has no step before
    that backward, so `runner.model.fit` (whose `runner` is followed through every script) is
    never evaluated; a whole reading evaluates it. The findings are the same."""
    files = {"helpers.py": HELPERS, "runner.py": RUNNER}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(8)})
    compared = compare_searches(files, tmp_path, monkeypatch, whole_readings)
    assert asked(compared.wider, tmp_path / "wider" / "runner.py", "runner.model.fit")
    assert not asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")


RUNNER_LAST = """
    import torch
    from helpers import update


    class Model:
        def fit(self, model):
            model.step(1)


    class Loop:
        def run(self, runner, model, optimizer, loss):
            scaler = torch.amp.GradScaler("cuda")
            scaler.step(optimizer)
            update(runner.model.fit(model), scaler, loss)
    """


def test_a_call_ending_the_reading_is_not_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller whose last statement with calls is the helper's call, with no clip of its
    own: a whole reading does not enter its helpers there (order.quiet_tail), and neither does
    the statement-wise one: `runner.model.fit` is never evaluated."""
    files = {"helpers.py": HELPERS, "runner.py": RUNNER_LAST}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(8)})
    compared = compare_searches(files, tmp_path, monkeypatch, whole_readings)
    assert not asked(compared.wider, tmp_path / "wider" / "runner.py", "runner.model.fit")
    assert not asked(compared.kept, tmp_path / "kept" / "runner.py", "runner.model.fit")
