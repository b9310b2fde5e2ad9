"""The order of backward, unscale, clip and step calls in a function, and in the helpers it calls.

A search says what each call is (`Classify`: a rule knows its own calls by qualified name or by
the evaluator's values); this module walks a function's statements in source order, enters the
project functions it calls (a few levels deep), and gives the events in the order they run,
each with the statement of the function read where a fix can go. Receivers and arguments are
compared by their structure (`ast.dump`), with a helper's parameters replaced by the caller's
arguments, so `scaler.step(opt)` in a helper and `scaler.scale(loss)` in its caller meet.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path

from amp_clipfix.analysis.callables import callees, step_closure, written_at
from amp_clipfix.analysis.entered import calling_context, entered_context
from amp_clipfix.analysis.evaluate import all_params
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.nodes import child_nodes
from amp_clipfix.analysis.values import Fn
from amp_clipfix.records import record, replace

HELPER_DEPTH = 3
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class EventKind(str, Enum):
    BACKWARD = "backward"  # gradients are made (scaled when `scaler` is set)
    UNSCALE = "unscale"  # scaler.unscale_(optimizer)
    CLIP = "clip"  # gradients are clipped
    STEP = "step"  # an optimizer steps (through the scaler when `scaler` is set)


@record(frozen=True)
class Seen:
    """What a classifier says a call is: its kind, the expressions of the scaler and optimizer
    it names, and anything the rule wants to keep (`detail`: an argument node, say)."""

    kind: EventKind
    scaler: ast.expr | None = None
    optimizer: ast.expr | None = None
    detail: object = None


@record(frozen=True)
class Event:
    """One call in run order. `scaler` and `optimizer` are structural keys of the expressions
    meant (never shown); `statement` is the statement of the function read that runs it (the
    call itself, or the call of the helper it is in); `file` the file of the call."""

    kind: EventKind
    call: ast.Call
    file: FileFacts
    statement: ast.stmt
    scaler: str | None = None
    optimizer: str | None = None
    via: tuple[ast.Call, ...] = ()  # helper calls it is reached through, outermost first
    detail: object = None  # what the classifier wants to keep (an argument node, ...)
    # The scaler's and optimizer's code as it may be written in the function read (a helper's
    # parameter becomes the caller's argument), None where it cannot be written there.
    scaler_code: str | None = None
    optimizer_code: str | None = None
    # The event as the helper it is in reads it (its statement, file and codes there), for a
    # fix that goes inside the helper (the backward and the clip both in one helper's call).
    inner: Event | None = None


# (file, call) -> what the call is, or None (then a project function it calls is entered).
Classify = Callable[[FileFacts, ast.Call], "Seen | None"]
# (file, function read, call) -> whether the call may run project code (analysis/reach.py);
# None: every call.
Enters = Callable[[FileFacts, ast.AST | None, ast.Call], bool] | None
# (call, helper entered through it) -> the helper's statement to start reading at (None: all)
Starts = Callable[[ast.Call, Fn], "ast.stmt | None"] | None
# (path of a helper's module that holds none of the searches' words) -> whether the helper is
# entered; None: never. A rule whose events such a module may make says which (`anywhere`).
Outside = Callable[[Path], bool] | None


def anywhere(path: Path) -> bool:
    """Every project module's helpers are entered (an `Outside`)."""
    return True


def key(node: ast.AST | None) -> str | None:
    """A structural key of an expression (the same variable or attribute gives the same key)."""
    return None if node is None else ast.dump(node, annotate_fields=False)


Body = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


def gated(gate: Enters, enters: Enters) -> Enters:
    """`enters`, asked only of the calls `gate` lets through (None: every call)."""
    if gate is None or enters is None:
        return enters if gate is None else gate
    return lambda file, function, call: gate(file, function, call) and enters(file, function, call)


def functions(file: FileFacts) -> Iterator[Body]:
    """The module's own code, then every function and method of the file, outer before inner."""
    yield file.tree
    for node in file.summary.walked_statements():  # ast.walk's order, statements only
        if isinstance(node, FUNCTIONS):
            yield node


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body and of the blocks inside it, in source order; functions and
    classes defined inside are left out (they run when called)."""
    for statement in body:
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                blocks = [h for h in inner if isinstance(h, ast.ExceptHandler)]
                for handler in blocks:
                    yield from statements(handler.body)
                yield from statements([s for s in inner if isinstance(s, ast.stmt)])
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from statements(case.body)


# calls_of's answers by statement: a helper's body is read again at every call of it, in every
# reading (mmengine: 4,011 asks of 348 statements). Weak keys: the answers go with their tree.
_CALLS: weakref.WeakKeyDictionary[ast.stmt, list[ast.Call]] = weakref.WeakKeyDictionary()


def calls_of(statement: ast.stmt) -> list[ast.Call]:
    """The calls a statement makes itself (not those of its blocks), inner calls first (the
    same list each time: not to be changed)."""
    known = _CALLS.get(statement)
    if known is None:
        known = _CALLS[statement] = own_calls(statement)
    return known


def own_calls(statement: ast.stmt) -> list[ast.Call]:
    found: list[ast.Call] = []
    stack: list[ast.AST] = [statement]
    own = {
        id(s)
        for f in ("body", "orelse", "finalbody", "handlers", "cases")
        for s in getattr(statement, f, None) or ()
    }
    while stack:
        node = stack.pop()
        if id(node) in own or isinstance(node, (ast.Lambda, *FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        stack.extend(child_nodes(node))  # ast.iter_child_nodes without the contexts
    return sorted(found, key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))


def callee_chain(call: ast.Call) -> list[ast.AST]:
    """A call, its callee and the receivers under it down to a name (`self.state.to(x)`:
    the call, `self.state.to`, `self.state`, `self`; through items and calls): the nodes a
    classifier asks about, in the call's own code (never inside a lambda)."""
    found: list[ast.AST] = [call]
    node: ast.AST = call.func
    while True:
        found.append(node)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return found


def events(
    facts: ProjectFacts,
    file: FileFacts,
    function: Body,
    classify: Classify,
    depth: int = 0,
    enters: Enters = None,
    first: ast.stmt | None = None,
    starts: Starts = None,
    until: ast.stmt | None = None,
    tail: bool = False,
    ctx: Ctx | None = None,
    outside: Outside = None,
) -> list[Event]:
    """The events of `function` in run order (source order; loops are read once). `enters`
    says which calls may run project code: the others are not asked what they run. `first`:
    the statement to start at (the events of the statements before it are left out);
    `starts`: the same for a helper entered through a call; `until`: the statement to stop
    before. `tail` (a reading to the function's end, depth 0): the helpers of the last
    statement that makes calls are not entered when no clip comes before it and it makes
    none itself (`quiet_tail`). `ctx`: the context a helper is read in (its arguments bound
    to those of the call entering it: analysis/entered.py); None: the function's own.
    `outside`: which helpers in files holding no search word are entered (None: none)."""
    found: list[Event] = []
    listed: list[tuple[ast.stmt, list[ast.Call]]] = []
    for statement in statements(function.body):
        if statement is until:
            break
        if first is not None:
            if statement is not first:
                continue
            first = None
        listed.append((statement, calls_of(statement)))
    evaluator = facts._evaluator  # made: each call's callee is asked about (not made here)
    if evaluator is not None:
        summary = evaluator.summary(file.path) or file.summary
        chains = [node for _, calls in listed for call in calls for node in callee_chain(call)]
        evaluator.note_contexts(summary, function, chains)
    quiet = tail and depth == 0 and until is None
    last = max((i for i, (_, calls) in enumerate(listed) if calls), default=-1)
    for index, (statement, calls) in enumerate(listed):
        if quiet and index == last:
            own = quiet_tail(file, statement, calls, classify, found)
            if own is not None:
                found += own
                continue
        for call in calls:
            runs = enters is None or enters(file, function, call)  # before classify: it asks too
            seen = classify(file, call)
            if seen is not None:
                if seen.kind is EventKind.STEP and depth < HELPER_DEPTH:
                    # `optimizer.step(closure)` runs the closure first (callables.step_closure)
                    closure = closure_events(facts, file, call, classify, depth, enters, outside)
                    for inner in closure:
                        found.append(replace(inner, statement=statement, via=(call, *inner.via)))
                found.append(own_event(file, statement, call, seen))
                continue
            if depth < HELPER_DEPTH and runs:
                entered = helper_events(
                    facts, file, call, classify, depth, function, enters, starts, ctx, outside
                )
                for inner in entered:
                    found.append(replace(inner, statement=statement, via=(call, *inner.via)))
    return found


def quiet_tail(
    file: FileFacts,
    statement: ast.stmt,
    calls: list[ast.Call],
    classify: Classify,
    found: list[Event],
) -> list[Event] | None:
    """The events of a reading's last statement that makes calls, its own calls only, where
    what its helpers and closures run cannot matter to a reading of the order of backward, clip
    and step (ACF004's): no clip comes before the statement and it makes none itself, so a clip
    a helper makes there has no step after it but in the same statement (no finding: the
    helper's own reading reports it) and no clip of the reading's own is left for its callers
    to read. None when one does (then everything is entered, as always)."""
    if any(event.kind is EventKind.CLIP for event in found):
        return None
    seen = [classify(file, call) for call in calls]
    if any(s is not None and s.kind is EventKind.CLIP for s in seen):
        return None
    return [own_event(file, statement, c, s) for c, s in zip(calls, seen) if s is not None]


def own_event(file: FileFacts, statement: ast.stmt, call: ast.Call, seen: Seen) -> Event:
    """The event a classified call of the function read makes itself."""
    return Event(
        seen.kind,
        call,
        file,
        statement,
        key(seen.scaler),
        key(seen.optimizer),
        detail=seen.detail,
        scaler_code=None if seen.scaler is None else file.code(seen.scaler),
        optimizer_code=None if seen.optimizer is None else file.code(seen.optimizer),
    )


def helper_events(
    facts: ProjectFacts,
    file: FileFacts,
    call: ast.Call,
    classify: Classify,
    depth: int,
    reading: ast.AST | None = None,
    enters: Enters = None,
    starts: Starts = None,
    ctx: Ctx | None = None,
    outside: Outside = None,
) -> list[Event]:
    """The events of the project functions `call` may run (a function, a bound method, a
    closure, an instance's `__call__`: callables.callees), in the caller's keys: an expression
    of the helper is keyed and written as it reads at the call (callables.written_at). `ctx`:
    the context the function read was entered with (None: its own); each helper is read with
    the call's arguments bound (analysis/entered.py)."""
    found: list[Event] = []
    evaluator = facts.evaluator
    summary = evaluator.summary(file.path) or file.summary
    caller = calling_context(evaluator, summary, reading, call, ctx)
    for value in callees(facts, file, call, caller if caller is ctx else None):
        helper = helper_file(facts, value.summary.path, outside)
        if helper is None:
            continue
        names = parameter_keys(value, call)
        first = None if starts is None else starts(call, value)
        inner = entered_context(evaluator, value, call, caller)
        inner_events = events(
            facts,
            helper,
            value.node,
            classify,
            depth + 1,
            enters,
            first,
            starts,
            ctx=inner,
            outside=outside,
        )
        for event in inner_events:
            scaler = names.get(event.scaler or "")
            optimizer = names.get(event.optimizer or "")
            found.append(
                replace(
                    event,
                    scaler=scaler[0] if scaler else event.scaler,
                    optimizer=optimizer[0] if optimizer else event.optimizer,
                    scaler_code=file.code(scaler[1]) if scaler else None,
                    optimizer_code=file.code(optimizer[1]) if optimizer else None,
                    inner=event,
                )
            )
            if reading is not None and not (scaler and optimizer):
                found[-1] = translated(facts, value, call, reading, found[-1], event)
    return found


def closure_events(
    facts: ProjectFacts,
    file: FileFacts,
    call: ast.Call,
    classify: Classify,
    depth: int,
    enters: Enters = None,
    outside: Outside = None,
) -> list[Event]:
    """The events of the project function a step is given as its closure, which it runs before
    it steps (keys and codes as a closure's: its free names are the caller's)."""
    found: list[Event] = []
    for fn in step_closure(facts, file, call):
        helper = helper_file(facts, fn.summary.path, outside)
        if helper is not None:
            inner = events(facts, helper, fn.node, classify, depth + 1, enters, outside=outside)
            found += [replace(e, inner=e) for e in inner]
    return found


def helper_file(facts: ProjectFacts, path: Path, outside: Outside) -> FileFacts | None:
    """The file of a helper a reading enters: one that holds a search's word (what the rules
    read), or any other project module `outside` lets in (loaded then)."""
    if path in facts.files:
        return facts.files[path]
    return facts.file(path) if outside is not None and outside(path) else None


def translated(
    facts: ProjectFacts, fn: Fn, call: ast.Call, reading: ast.AST, made: Event, event: Event
) -> Event:
    """The event's scaler and optimizer that are not a parameter as a whole (`self.scaler`, a
    closure's free `optimizer`) keyed and written as they read at the call, where they can be."""
    changes: dict[str, str | None] = {}
    for role in ("scaler", "optimizer"):
        node = event_node(event, role)
        if node is None or getattr(made, f"{role}_code") is not None:
            continue
        written = written_at(facts, fn, call, node, reading)
        if written is not None:
            changes[role] = key(written)
            changes[f"{role}_code"] = ast.unparse(written)
    return replace(made, **changes) if changes else made


def event_node(event: Event, role: str) -> ast.expr | None:
    """The expression the event's `role` key was made of, read back from its code."""
    code = getattr(event, f"{role}_code")
    if code is None:
        return None
    try:
        parsed = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return None
    return parsed.body


def parameter_keys(fn: Fn, call: ast.Call) -> dict[str, tuple[str, ast.expr]]:
    """The key of each helper parameter -> the key and expression of the caller's argument."""
    params = [p.arg for p in all_params(fn.node.args)]
    positional = [p.arg for p in (*fn.node.args.posonlyargs, *fn.node.args.args)]
    if fn.bound and positional:
        positional = positional[1:]
    mapping: dict[str, tuple[str, ast.expr]] = {}
    for name, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        mapping[key(ast.Name(name, ast.Load())) or ""] = (key(arg) or "", arg)
    for keyword in call.keywords:
        if keyword.arg in params:
            name_key = key(ast.Name(keyword.arg, ast.Load())) or ""
            mapping[name_key] = (key(keyword.value) or "", keyword.value)
    return mapping


def statement_line_is_own(file: FileFacts, statement: ast.stmt) -> bool:
    """The statement starts its line (a line can be put before it): not `if x: clip(...)`."""
    line = file.line(statement.lineno)
    return not line[: file.span(statement).column].strip()
