"""A parameter's callers are followed only as far as a read can see (callers.py
`parameter_from_callers`).

Every read of a value bounds it (cycles.py `bounded`): the first MAX_VALUES - 1 distinct known
values, the rest one value decided at run time. So once a parameter's calls have given more
than MAX_VALUES known values, the later calls cannot change what any read of it gets, and they
are not evaluated (ColossalAI: `optimizer` of `Booster.backward`, 304 distinct optimizers
from every test's `booster.backward(loss, optimizer)`, past its question's 25,000 evaluations,
of which a read kept 63). A function that stores into the parameter (`x.append(...)`,
`x["k"] = ...`) makes something of every value the read sees: its calls are all followed.
So is a parameter no cycle it cannot settle has met (cycles.py puts a settled cycle's values in
the order of where each is written, so a later call closing one could change which are first).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from evaluated import one_module

from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.frame import MAX_VALUES
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Lit, Opaque

CALLERS = 100


# `x` and `y` pass each other on through an attribute: a cycle no walk can settle (cycles.py
# settles only names read and parameters followed), met by the first call of `sink`
RING = "    other(x.attr)\n"
OTHER = "def other(y):\n    sink(y.attr)\n\n\n"


def source(store: str = "", ring: bool = True) -> str:
    """`sink(x)` called by 100 functions, each passing its own literal (after `other`)."""
    body = (RING if ring else "") + (f"    {store}\n" if store else "")
    return (
        f"def sink(x):\n{body}    return x\n\n\n"
        + (OTHER if ring else "")
        + "".join(f"def caller{i}():\n    return sink({i})\n\n\n" for i in range(CALLERS))
    )


def read_sink(evaluator: Evaluator, summary: Summary) -> list[object]:
    sink = summary.tree.body[0]
    assert isinstance(sink, ast.FunctionDef)
    read = sink.body[-1]
    assert isinstance(read, ast.Return) and read.value is not None
    return evaluator.force(evaluator.ev(read.value, evaluator.ctx_of(summary, read.value)))


def evaluated_arguments(evaluator: Evaluator, summary: Summary) -> list[int]:
    """Which callers' arguments the evaluator has evaluated (its memo holds them)."""
    evaluated = {key[0] for key in evaluator.memo if isinstance(key, tuple)}
    found = []
    functions = [
        node
        for node in summary.tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("caller")
    ]
    for number, function in enumerate(functions):
        returned = function.body[0]
        assert isinstance(returned, ast.Return) and isinstance(returned.value, ast.Call)
        if id(returned.value.args[0]) in evaluated:
            found.append(number)
    return found


def test_the_calls_past_what_a_read_keeps_are_not_evaluated(tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, source())
    values = read_sink(evaluator, summary)
    # what the read gets: the first MAX_VALUES - 1 literals, then one run-time value
    assert [v.value for v in values if isinstance(v, Lit)] == list(range(MAX_VALUES - 1))
    assert len(values) == MAX_VALUES and isinstance(values[-1], Opaque)
    # the calls evaluated: until more than MAX_VALUES values were known (before: all 100)
    assert evaluated_arguments(evaluator, summary) == list(range(MAX_VALUES + 1))


@pytest.mark.parametrize("store", ["x.append(1)", 'x["key"] = 1', "x.update(key=1)"])
def test_a_parameter_the_function_stores_into_is_followed_to_every_call(
    tmp_path: Path, store: str
) -> None:
    evaluator, summary = one_module(tmp_path, source(store))
    read_sink(evaluator, summary)
    assert evaluated_arguments(evaluator, summary) == list(range(CALLERS))


def test_a_parameter_with_few_values_is_followed_to_every_call(tmp_path: Path) -> None:
    """100 calls passing one module-level value: one known value, every call followed."""
    text = (
        "def sink(x):\n"
        + RING
        + "    return x\n\n\n"
        + OTHER
        + "".join(f"def caller{i}():\n    return sink(SHARED)\n\n\n" for i in range(CALLERS))
    )
    evaluator, summary = one_module(tmp_path, text + "SHARED = 3\n")
    values = read_sink(evaluator, summary)
    assert [v.value for v in values if isinstance(v, Lit)] == [3]
    assert evaluated_arguments(evaluator, summary) == list(range(CALLERS))


def test_a_parameter_that_met_no_cycle_is_followed_to_every_call(tmp_path: Path) -> None:
    """No cycle met yet: a later call may close one that is settled (its values then put in
    the order of where each is written), so every call is followed, as before."""
    evaluator, summary = one_module(tmp_path, source(ring=False))
    values = read_sink(evaluator, summary)
    assert [v.value for v in values if isinstance(v, Lit)] == list(range(MAX_VALUES - 1))
    assert evaluated_arguments(evaluator, summary) == list(range(CALLERS))
