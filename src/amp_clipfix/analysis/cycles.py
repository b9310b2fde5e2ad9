"""A cycle of parameters followed through mutually recursive callers (issue 39's ring of
factories, each passing `fused` on to the next), answered once as its least fixpoint.

Without it every member of a cycle is asked anew by every question: frame.py's `recall` keeps
only the cycle's head (the member asked first) for the run, and the other members' values,
cut at the head, for their question only, so a ring of N members costs N walks of N. Here the
head, once its first walk is done, walks the cycle again with each cut member reading the
value it has so far instead of nothing, until no cut member's values change: then every member
holds what it would hold asked first (each member's callers, followed round the whole cycle),
and every member goes to the run's memo. Values in a settled cycle are put in one order, by
where each is written, so an answer does not depend on which member was asked first.

Only a cycle of parameters passed on is settled: its members are parameters followed to their
callers and names read (the arguments passing a parameter on), so it only moves values made
outside it, and a fixpoint is reached in two or three walks. A cycle through anything that
makes a value (an expression other than a name, a function's returns, an attribute, a class's
bases, a rebound global), one a budget or a bound cut, and a ring no call enters from outside
(each member then says "decided at run time" at its own parameter) are left as they were: the
head in the run's memo, the members asked anew by each question (a long ring no call enters
is settled by passon.py's worklist, each member its own entry point).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from amp_clipfix.analysis.frame import (
    MAX_VALUES,
    NO_CYCLE,
    Ctx,
    Entered,
    EvaluatorBase,
    Kept,
    value_key,
)
from amp_clipfix.analysis.values import Opaque

# Walks of a cycle before its values are taken as they were (a value made anew by every walk,
# an optimizer built inside the cycle, never settles; a ring of pass-ons settles in two).
MAX_PASSES = 4
# Each kind of memoised evaluation (frame.py enter / leave) and the run's memo it fills.
MEMOS = {
    "ev": "memo",
    "callers": "callers_cache",
    "returns": "returns_cache",
    "found": "found_callers",
    "global": "global_memo",
    "attr": "attr_cache",
    "mro": "mro_cache",
}
Frame = tuple[str, object]
# The evaluations a settled cycle is made of: parameters followed to their callers, and names
# read (the arguments that pass a parameter on); a cycle through anything that makes a value
# (a call's returns, a list built, an attribute) is left as it was (evaluate.py `ev`).
SETTLED = frozenset({"callers", "ev"})


def cut_value(ev: EvaluatorBase, frame: Frame, cut: list[object]) -> list[object]:
    """What an evaluation met again inside its own value (a cycle) gives there: `cut`, but
    while its cycle is settled, the values it has so far."""
    assumed = ev.assumed.get(frame)
    return cut if assumed is None else assumed


def settled_ev(
    ev: EvaluatorBase, entered: Entered, unsettled: int, node: ast.AST, ctx: Ctx
) -> list[object]:
    """evaluate.py `ev`'s value of `node` (at most MAX_VALUES values), its cycle settled when
    it is one's head. A cycle through an expression that makes a value (anything but a name
    read) is not settled: the value is made anew by every walk."""

    values = ev.ev_node(node, ctx)
    if len(values) > MAX_VALUES:
        values = bounded(values, node, ctx)
    if ev.low > entered.place:  # no cycle through it: most evaluations, at no further cost
        return values
    if not isinstance(node, ast.Name):
        ev.unsettled += 1
        return values

    def walk() -> list[object]:
        again = ev.ev_node(node, ctx)
        return bounded(again, node, ctx) if len(again) > MAX_VALUES else again

    return settle(ev, entered, unsettled, ("ev", (id(node), id(ctx))), values, walk)


def settle(
    ev: EvaluatorBase,
    entered: Entered,
    unsettled: int,
    frame: Frame,
    values: list[object],
    walk: Callable[[], list[object]],
) -> list[object]:
    """The head's value once its cycle is settled (`walk` asks the head's evaluation again);
    `values` as they are, with nothing else changed, when the evaluation is no head of a cycle
    cut only at parameters (`unsettled`: ev.unsettled when it started) or does not settle."""
    if ev.low != entered.place or not ev.members or ev.cuts != entered.cuts:
        return values
    if ev.unsettled != unsettled or any(kind not in SETTLED for kind, _ in ev.members):
        return values
    first = (values, ev.low, ev.members, ev.cuts, ev.budget, ev.question_budget)
    kept = {member: ev.question_cache.get(member) for member in ev.members}
    before = set(ev.question_cache)
    cut = ev.cut_frames & (ev.members | {frame})
    if any(kind == "ev" for kind, _ in cut):  # cut to "decided at run time": from nothing
        current: dict[Frame, list[object]] = {member: [] for member in cut}
    else:  # cut to nothing already: the first walk is the first step
        current = {**{member: member_values(ev, member) for member in cut}, frame: values}
    for _ in range(MAX_PASSES):
        assumed = {member: current[member] for member in cut}
        for member in ev.members:
            ev.question_cache.pop(member, None)
        ev.assumed.update(assumed)
        ev.low, ev.members = NO_CYCLE, set()
        ev.defer_off += 1  # walked as the first walk was (passon.py)
        try:
            values = walk()
        finally:
            ev.defer_off -= 1
        current = {**{member: member_values(ev, member) for member in cut}, frame: values}
        if ev.low != entered.place or ev.cuts != entered.cuts or ev.unsettled != unsettled:
            break
        if all(same(current[member], assumed[member]) for member in cut):
            if values and all(member_values(ev, member) for member in ev.members):
                for member in cut:
                    ev.assumed.pop(member, None)
                return remember(ev, frame, values)
            break  # a member holds nothing (a cycle no value enters): as it was
    for member in cut:  # not settled: the first walk's values and state, as without this
        ev.assumed.pop(member, None)
    values, ev.low, ev.members, ev.cuts, ev.budget, ev.question_budget = first
    for added in set(ev.question_cache) - before:  # what the later walks kept, cut or not
        del ev.question_cache[added]
    for member, value in kept.items():
        if value is not None:
            ev.question_cache[member] = value
    ev.unsettled = unsettled
    return values


def remember(ev: EvaluatorBase, frame: Frame, values: list[object]) -> list[object]:
    """Every member's value of the last walk (made with every cut member reading its settled
    value) to the run's memo, in one order; the head's in the same order (its `leave` keeps
    it for the run: no longer a head whose members are asked anew)."""
    for member in ev.members:
        kept: Kept | None = ev.question_cache.pop(member, None)
        if kept is None or kept.hard:
            continue
        kind, key = member
        getattr(ev, MEMOS[kind])[key] = in_order(kept.values)
    ev.members = set()
    return in_order(values)


def member_values(ev: EvaluatorBase, member: Frame) -> list[object]:
    kept = ev.question_cache.get(member)
    return [] if kept is None else kept.values


def same(one: list[object], other: list[object]) -> bool:
    return {value_key(value) for value in one} == {value_key(value) for value in other}


def in_order(values: list[object]) -> list[object]:
    """The values by where each is written (file, line, column; its kind between values
    written at one place), those written nowhere (a library name, a dict) after them in the
    order met: the same list whichever member of a cycle was asked first."""
    return sorted(values, key=place)


def place(value: object) -> tuple[object, ...]:
    node = getattr(value, "node", None) or getattr(value, "call", None)
    summary = getattr(value, "summary", None)
    line = getattr(node, "lineno", None)
    if summary is None or line is None:
        return (1,)
    column = getattr(node, "col_offset", 0)
    end = (getattr(node, "end_lineno", None) or line, getattr(node, "end_col_offset", None) or 0)
    return (0, str(summary.path), line, column, *end, type(value).__name__)


def bounded(values: list[object], node: ast.AST, ctx: Ctx) -> list[object]:
    """At most MAX_VALUES values: the distinct known ones first (literals, optimizers, dicts,
    classes...), everything decided at run time as one Opaque at `node`."""
    kept: list[object] = []
    seen: set[int] = set()
    for value in values:
        if isinstance(value, Opaque) or id(value) in seen:
            continue
        seen.add(id(value))
        kept.append(value)
    return [*kept[: MAX_VALUES - 1], Opaque(node, ctx.summary)]
