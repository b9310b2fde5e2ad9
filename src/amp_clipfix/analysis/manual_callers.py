"""The readings a manual-optimization search makes beyond the files that write `manual_backward`:
the callers of a function whose backward its own reading leaves open.

`manual.manual_reads` reads the functions of the files that write `manual_backward` (the
methods of manual modules there, and any function whose lines write it). A backward run by a
helper is met where a reading enters the helper (order.py), but the function that calls the
helper, then clips and steps, may sit in a file that never writes the word: a training step
calling `backward_of(self, loss)` imported from another module. So the search also reads the
callers of each function read whose backward is left open (no step after it in its own
reading): they are found by the callers index (the evaluator's `callers`, whatever the import
spelling it resolves: a module attribute, a partial, a function passed on), up to the helper
levels a reading enters (order.HELPER_DEPTH), and a caller's callers only where its own reading
leaves the backward open too. A backward is the search's when the rule's classifier makes one
of it (a module's `manual_backward` by value), or when it is written `<p>.manual_backward(...)`
on a parameter of the function other than a method's own object: that value is the caller's,
and only a reading of the caller, the helper entered with the caller's arguments, can tell.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from amp_clipfix.analysis.callables import bindings, callees, caller_readings
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.lightning_api import MODULE_BACKWARD
from amp_clipfix.analysis.order import (
    FUNCTIONS,
    HELPER_DEPTH,
    Body,
    Event,
    EventKind,
    calls_of,
    statements,
)
from amp_clipfix.analysis.shapes import all_params, is_method
from amp_clipfix.analysis.values import Fn

# Reads a function as the search reads it (its class given) and returns its events.
Read = Callable[[FileFacts, Body], list[Event]]


def open_backward(facts: ProjectFacts, file: FileFacts, function: Body, order: list[Event]) -> bool:
    """Whether `function`'s reading (`order`) leaves a backward for its callers: a backward
    event, or a call written `<parameter>.manual_backward(...)` (a method's own object only
    in a mixin: `mixin_self`), with no step after the last of them."""
    if not isinstance(function, FUNCTIONS):
        return False
    body = list(statements(function.body))
    position = {id(statement): index for index, statement in enumerate(body)}
    last = max(
        (position.get(id(e.statement), -1) for e in order if e.kind is EventKind.BACKWARD),
        default=-1,
    )
    params = parameters(file, function)
    params |= mixin_self(facts, file, function)
    for index, statement in enumerate(body):
        if index > last and any(on_parameter(call, params) for call in calls_of(statement)):
            last = index
    if last < 0:
        return False
    return not any(
        e.kind is EventKind.STEP and position.get(id(e.statement), -1) >= last for e in order
    )


def mixin_self(
    facts: ProjectFacts, file: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> set[str]:
    """A method's own object where its class is a mixin, a class with no base: `self` is then
    a module only as an instance of a class that adds one (`class Model(BackwardMixin,
    L.LightningModule)`), which its callers' readings know. (A class with a base that is no
    LightningModule by value, a library's, is not followed: on Lightning's own tree every
    test module is one.)"""
    owner = facts.class_of(file, function)
    positional = [*function.args.posonlyargs, *function.args.args]
    if owner is None or owner.node.bases or owner.node.keywords or not positional:
        return set()
    return {positional[0].arg} if is_method(file.summary, function) else set()


def parameters(file: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters whose values the callers give: all but a method's own object."""
    params = [p.arg for p in all_params(function.args)]
    positional = [*function.args.posonlyargs, *function.args.args]
    if positional and is_method(file.summary, function):
        params.remove(positional[0].arg)
    return set(params)


def on_parameter(call: ast.Call, params: set[str]) -> bool:
    """`<p>.manual_backward(...)` or `<p>.<attr>....manual_backward(...)` with `p` a parameter."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == MODULE_BACKWARD):
        return False
    inner = func.value
    while isinstance(inner, ast.Attribute):
        inner = inner.value
    return isinstance(inner, ast.Name) and inner.id in params


def read_callers(
    facts: ProjectFacts, helpers: list[tuple[FileFacts, Body]], read: Read, known: dict[int, bool]
) -> None:
    """Reads (with `read`) the callers of each helper, HELPER_DEPTH levels up, a caller's own
    callers only where its reading leaves the backward open. `known`: whether each function
    read leaves it open, by id (one read already is not read again)."""
    for file, helper in helpers:
        opened: dict[int, bool] = {}  # by call: whether its function's callers are followed

        def follow(call: ast.Call, opened: dict[int, bool] = opened) -> bool:
            return opened.get(id(call), False)

        for where, reading, call in caller_readings(
            facts, file, helper, HELPER_DEPTH, follow=follow
        ):
            if id(reading) not in known:
                order = read(where, reading)
                known[id(reading)] = open_backward(facts, where, reading, order)
            opened[id(call)] = known[id(reading)]


def receiver_at_reading(facts: ProjectFacts, file: FileFacts, backward: Event) -> ast.expr | None:
    """The receiver of a backward reached through helpers, as the function read (in `file`)
    passes it (`backward_of(self, loss)` with `module.manual_backward(loss)` in the helper:
    `self`): each call binds the helper's parameter that is the receiver as a whole to one of
    its arguments (callables.bindings). None where a level does not (an attribute of a
    parameter, a local, a free name) or its call may run several helpers."""
    func = backward.call.func
    if not backward.via or not isinstance(func, ast.Attribute):
        return None
    helpers: list[Fn] = []
    where: FileFacts | None = file
    for index, call in enumerate(backward.via):
        inner = backward.via[index + 1] if index + 1 < len(backward.via) else backward.call
        fns = [] if where is None else callees(facts, where, call)
        fns = [fn for fn in fns if fn.summary.enclosing(inner)[0] is fn.node]
        if len(fns) != 1:
            return None
        helpers.append(fns[0])
        where = facts.file(fns[0].summary.path)
    node: ast.expr = func.value
    for fn, call in zip(reversed(helpers), reversed(backward.via)):
        bound = bindings(fn, call)
        if not isinstance(node, ast.Name) or node.id not in bound:
            return None
        node = bound[node.id]
    return node
