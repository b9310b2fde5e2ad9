"""A question its own budget cut is answered again as it was (frame.py `past_budget`).

A question (an evaluation asked with none running) gets QUESTION_BUDGET evaluations; past them
the rest is decided at run time and the answer is kept for that question only. Asked again as a
question, it used to be evaluated anew with a whole budget more, reading what the first ask
memoised on the way: a second answer, larger, and the same budget spent again (ColossalAI: the
callee of `loss.backward` in `OptimizerWrapper.backward`, 25,000 evaluations and then 15,702
more, once per caller reading). Now the cut answer is the question's for the run: every ask
gets the same values, and only the first spends a budget.
"""

from __future__ import annotations

import ast
from pathlib import Path

from evaluated import one_module

from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Lit

CALLERS = 30
# `x` in `sink` holds what its 30 callers pass: each a literal, one evaluation or two apiece
SOURCE = "def sink(x):\n    return x\n\n\n" + "".join(
    f"def caller{i}():\n    return sink({i})\n\n\n" for i in range(CALLERS)
)


def ask(evaluator: Evaluator, summary: Summary) -> tuple[list[object], int]:
    """The values of `x` read in `sink`, asked as a question, and the evaluations it spent."""
    sink = summary.tree.body[0]
    assert isinstance(sink, ast.FunctionDef)
    read = sink.body[0]
    assert isinstance(read, ast.Return) and read.value is not None
    before = evaluator.budget
    values = evaluator.force(evaluator.ev(read.value, evaluator.ctx_of(summary, read.value)))
    return values, before - evaluator.budget


def literals(values: list[object]) -> list[object]:
    return sorted(v.value for v in values if isinstance(v, Lit))  # type: ignore[type-var]


def test_a_question_its_budget_cut_is_answered_again_as_it_was(tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, SOURCE)
    evaluator.question_limit = 40  # more than one caller's worth, less than all of them
    first, spent = ask(evaluator, summary)
    assert spent == 40 and evaluator.question_budget <= 0  # cut by its budget
    assert 0 < len(literals(first)) < CALLERS
    for _ in range(2):
        again, spent = ask(evaluator, summary)
        # before: 22 evaluations more and all 30 literals (what the first ask memoised read)
        assert spent == 0
        assert again == first


def test_the_cut_answer_stays_when_the_budget_would_now_allow_more(tmp_path: Path) -> None:
    """The answer is the question's, not the budget's: raised later, it is not asked anew."""
    evaluator, summary = one_module(tmp_path, SOURCE)
    evaluator.question_limit = 20
    first, _ = ask(evaluator, summary)
    evaluator.question_limit = 1_000
    again, spent = ask(evaluator, summary)
    assert spent == 0 and again == first


def test_a_question_within_its_budget_is_the_runs_as_before(tmp_path: Path) -> None:
    evaluator, summary = one_module(tmp_path, SOURCE)
    evaluator.question_limit = 1_000
    first, spent = ask(evaluator, summary)
    assert spent > 0 and literals(first) == list(range(CALLERS))
    assert not evaluator.past_budget  # no cut: the run's memo holds it
    again, spent = ask(evaluator, summary)
    assert spent == 0 and again == first


def test_a_question_the_runs_budget_cut_is_asked_anew(tmp_path: Path) -> None:
    """Only the question's own budget keeps its answer: once the run's budget is spent every
    question is cut at once, as before (nothing kept)."""
    evaluator, summary = one_module(tmp_path, SOURCE)
    evaluator.budget = 10
    first, _ = ask(evaluator, summary)
    assert evaluator.budget <= 0 and evaluator.question_budget > 0
    assert not evaluator.past_budget
    assert len(literals(first)) < CALLERS
