"""Partials of library methods: `functools.partial(fabric.clip_gradients, max_norm=1.0)` stored
and called later (`clip(model, optimizer)`) is one call of the method whose arguments are the
partial's, then the call's (a call's keyword replaces the partial's of the same name).

A search that reads the calls of a library method by their arguments (`x.clip_gradients(...)`)
reads `method_calls` instead: each written call as it is, and each call of a partial of the
method (the partial is known by value: the evaluator's `Part` made by that `partial(...)`),
with the call each argument is written in, so an edit lands where the argument is (or where a
keyword is added: the partial, which every call of it passes on). A partial no followed call
uses is read with its own arguments only (`called` False).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from amp_clipfix.analysis import names
from amp_clipfix.analysis.values import Ext, Part
from amp_clipfix.records import field, record

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import FileFacts, ProjectFacts


@record(frozen=True)
class MethodCall:
    """One run of a library method `receiver.<attr>(...)`: `call` where it runs (the written
    call, or a call of the partial), `partial` the `functools.partial(...)` it goes through,
    `args` and `keywords` as merged (the partial's first), `written_in` the call each argument
    node is written in (by id)."""

    call: ast.Call
    receiver: ast.expr
    args: list[ast.expr]
    keywords: dict[str | None, ast.expr]
    partial: ast.Call | None = None
    called: bool = True
    written_in: dict[int, ast.Call] = field(default_factory=dict)

    @property
    def edited(self) -> ast.Call:
        """Where a keyword is added: the partial, which every call of it passes on."""
        return self.partial if self.partial is not None else self.call


def method_calls(facts: ProjectFacts, file: FileFacts, attr: str) -> Iterator[MethodCall]:
    """The runs of `<x>.<attr>(...)` in the file: written calls, and the calls of partials of
    the method made in the file (in the order of the calls). Either call writes `attr` (the
    callee's name, the partial's first argument): the calls on the lines writing it are read."""
    partials: list[ast.Call] = []
    for call in file.summary.calls_kept(lambda c: method_or_partial(c, attr), attr):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == attr:
            yield MethodCall(call, func.value, list(call.args), keywords_of(call))
        elif (
            call.args
            and isinstance(call.args[0], ast.Attribute)
            and call.args[0].attr == attr
            and is_partial(facts, file, func)
        ):
            partials.append(call)
    for partial in partials:
        yield from partial_runs(facts, file, partial)


def method_or_partial(call: ast.Call, attr: str) -> bool:
    """`<x>.<attr>(...)`, or a call whose first argument is `<x>.<attr>` (a partial of it)."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == attr:
        return True
    return bool(call.args) and isinstance(call.args[0], ast.Attribute) and call.args[0].attr == attr


def is_partial(facts: ProjectFacts, file: FileFacts, func: ast.expr) -> bool:
    return any(
        isinstance(v, Ext) and names.kind_of(v.qname) is names.Kind.PARTIAL
        for v in facts.values(file, func)
    )


def keywords_of(call: ast.Call) -> dict[str | None, ast.expr]:
    return {k.arg: k.value for k in call.keywords}


def partial_runs(facts: ProjectFacts, file: FileFacts, partial: ast.Call) -> Iterator[MethodCall]:
    """The calls of the partial in its file (by value), merged; the partial alone when none."""
    method = partial.args[0]
    assert isinstance(method, ast.Attribute)
    bound = partial.args[1:]
    found = False
    for call in file.summary.walked_calls():
        if call is partial or not isinstance(call.func, (ast.Name, ast.Attribute)):
            continue
        if not isinstance(call.func, ast.Name) and call.func.attr == method.attr:
            continue  # a written call of the method itself
        values = facts.values(file, call.func)
        if not any(isinstance(v, Part) and v.node is partial for v in values):
            continue
        found = True
        written = {id(n): partial for n in [*bound, *(k.value for k in partial.keywords)]}
        written.update({id(n): call for n in [*call.args, *(k.value for k in call.keywords)]})
        keywords = {**keywords_of(partial), **keywords_of(call)}
        yield MethodCall(call, method.value, [*bound, *call.args], keywords, partial, True, written)
    if not found:
        written = {id(n): partial for n in [*bound, *(k.value for k in partial.keywords)]}
        yield MethodCall(
            partial, method.value, list(bound), keywords_of(partial), partial, False, written
        )


def called_qnames(facts: ProjectFacts, file: FileFacts, func: ast.expr) -> frozenset[str]:
    """The library callables a call of `func` runs: what `func` is, and what a partial it may
    hold wraps (`clip = partial(torch.nn.utils.clip_grad_norm_, max_norm=1.0)`)."""
    return library_callables(facts.evaluator, facts.values(file, func))


def library_callables(evaluator: Evaluator, values: list[object]) -> frozenset[str]:
    """`called_qnames` of a callee's values (the evaluator's, forced)."""
    found: set[str] = set()
    for value in values:
        if isinstance(value, Ext):
            found.add(value.qname)
        elif isinstance(value, Part):
            found.update(v.qname for v in evaluator.force(value.funcs) if isinstance(v, Ext))
    return frozenset(found)
