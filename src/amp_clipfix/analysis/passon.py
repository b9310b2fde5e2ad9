"""A long chain of parameters passed on, walked with a worklist instead of inside one another
(issue 39: a ring of 1,000 or more mutually recursive factories, each passing `fused` on).

callers.py follows a parameter to its callers by asking the value each call passes, and a
parameter passed on by name asks the caller's own parameter: two evaluations inside one
another per link of the chain. Past frame.MAX_NESTING (about 450 links) the rest is cut, a
ring is never settled (cycles.py) and every question walks it again until the run's budget is
spent. Here the first parameter a question follows to its callers is the chain's root; a
parameter asked DEEP evaluations inside it raises TooDeep, and the root walks its chain again
without nesting: it collects the graph of parameters passed on (a parameter -> the caller
parameters that its calls pass by name), finds its strongly connected components (Tarjan,
with an explicit stack) and solves them in order, each from the values of those it reads:

- a component of one parameter that passes nothing round to itself holds what its calls pass,
  call by call, exactly as `EvaluatorBase.parameter_values` makes it;
- a cycle holds the least fixpoint, the same for every member (each reaches every other by
  passing the value on): every value its members' calls pass from outside it, once, in
  cycles.in_order's order, what a ring settled by cycles.py holds whichever member was asked
  first;
- a cycle no value enters from outside it (a ring no call enters: its members only call one
  another) holds, member by member, what the member holds asked first, whichever member that
  is: called only from inside its own cycle, it is an entry point called from outside
  (callers.py `entry_values`: decided at run time at its own parameter, or its default).

Every parameter and every name that read one goes to the run's memo (or, when something was
cut, to the question's, as frame.py `leave` would). A chain that is not only that (a member
asked other than by name, a cycle through an evaluation still running, a budget spent, more
than MAX_VALUES values) is walked as before, with nothing kept from the worklist: the answers
are never other than a walk that nests would give.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.cycles import bounded, in_order, settle
from amp_clipfix.analysis.decorators import wrapped_functions, wrapper_self
from amp_clipfix.analysis.frame import (
    MAX_DEPTH,
    MAX_VALUES,
    NO_CYCLE,
    Ctx,
    Entered,
    EvaluatorBase,
    Kept,
    Memo,
    Thunk,
    add_unique,
)
from amp_clipfix.analysis.plain_binds import bound_once
from amp_clipfix.analysis.shapes import all_params, is_method
from amp_clipfix.analysis.values import Opaque

# Evaluations running inside a chain's root past which a parameter asked there has the root
# walk the chain with the worklist (a ring of ~100 members; the walk that nests cuts at 1,000).
DEEP = 200
Key = tuple[int, str]  # a parameter: (id of its function, its name), as callers.py keys it


class TooDeep(Exception):  # noqa: N818 - a signal to the chain's root, not an error
    """A parameter asked DEEP evaluations inside its chain's root: the root walks the chain
    with the worklist."""


class Unsettled(Exception):  # noqa: N818 - the worklist gives way to the walk that nests
    """The chain is not only parameters passed on: walked as before."""


class Node:
    """A parameter of the chain, its calls' arguments (each call's list of parts: a read of
    another parameter of the chain, or an argument evaluated as usual) and its values. (This
    module's classes are written by hand, not made by `@dataclass`, which compiles their
    methods at every import.)"""

    def __init__(self, key: Key, function: ast.AST, param: ast.arg, ctx: Ctx) -> None:
        self.key = key
        self.function = function
        self.param = param
        self.ctx = ctx
        self.calls: list[list[object]] = []
        self.found = False
        self.values: list[object] = []


class Read:
    """A name passed on as an argument, reading the parameter `node` of its own function."""

    def __init__(self, node: Node, name: ast.Name, ctx: Ctx) -> None:
        self.node = node
        self.name = name
        self.ctx = ctx


class Chain:
    """One root's worklist; `broken` when a member was asked other than by the worklist."""

    def __init__(self, ev: EvaluatorBase, root: Node) -> None:
        self.ev = ev
        self.root = root
        self.nodes: dict[Key, Node] = {}
        self.broken = False


def followed(ev: EvaluatorBase, param: Node, node: ast.AST) -> list[object]:
    """A parameter's values from its callers (callers.py `parameter`, once neither memo nor
    a cycle answers), in its own frame (frame.py `enter` / `leave`): walked inside one
    another, a cycle settled where it closes (cycles.py), and past DEEP evaluations inside
    the chain's root, walked again by the root with the worklist."""
    chain = ev.settling.get(param.key)
    if chain is not None:  # a parameter a worklist settles, asked past it: it gives way
        chain.broken = True
        ev.cuts += 1
        return [Opaque(node, param.ctx.summary)]
    unsettled = ev.unsettled
    root = ev.passon_root is None and not ev.defer_off
    deep = ev.passon_root is not None and len(ev.serials) - ev.passon_root >= DEEP
    if deep and not ev.defer_off:
        raise TooDeep  # the chain's root walks it with the worklist
    function, arg, ctx = param.function, param.param, param.ctx
    entered = ev.enter("callers", param.key)
    if root:
        ev.passon_root = entered.place
    values = None
    try:
        try:
            values = ev.parameter_values(function, arg, ctx)
            values = settle(
                ev,
                entered,
                unsettled,
                ("callers", param.key),
                values,
                lambda: ev.parameter_values(function, arg, ctx),
            )
        except TooDeep:
            if not root:
                raise
            ev.passon_root = None
            values = settle_chain(ev, entered, unsettled, param)
    finally:
        if root:
            ev.passon_root = None
        ev.leave(entered, ev.callers_cache, "callers", param.key, values)
    return values


def settle_chain(ev: EvaluatorBase, entered: Entered, unsettled: int, root: Node) -> list[object]:
    """The root's values, its chain walked with the worklist (`entered`: the root's frame,
    `unsettled`: ev.unsettled when it started); the walk that nests when the worklist gives
    way, as if it had never run."""
    ev.cuts, ev.low, ev.members, ev.unsettled = entered.cuts, NO_CYCLE, set(), unsettled
    before = set(ev.question_cache)
    chain = Chain(ev, root)
    outer = ev.passon_root
    ev.passon_root = None  # what the chain evaluates as usual has chains of its own
    try:
        values = solve(chain)
    except Unsettled:
        values = None
    finally:
        ev.passon_root = outer
        for key in chain.nodes:
            ev.settling.pop(key, None)
    if values is not None and not chain.broken and ev.low == NO_CYCLE:
        keep(chain, entered)
        return values
    for added in set(ev.question_cache) - before:  # made while a member was cut
        del ev.question_cache[added]
    for member in chain.nodes.values():
        member.calls.clear()
    ev.cuts, ev.low, ev.members, ev.unsettled = entered.cuts, NO_CYCLE, set(), unsettled
    ev.defer_off += 1
    try:
        function, param, ctx = root.function, root.param, root.ctx
        values = ev.parameter_values(function, param, ctx)
        return settle(
            ev,
            entered,
            unsettled,
            ("callers", root.key),
            values,
            lambda: ev.parameter_values(function, param, ctx),
        )
    finally:
        ev.defer_off -= 1


def solve(chain: Chain) -> list[object]:
    """Every node's values, its components solved in order (those read first)."""
    ev = chain.ev
    for component in components(chain):
        first = component[0]
        if len(component) == 1 and not any(
            isinstance(part, Read) and part.node is first for call in first.calls for part in call
        ):
            first.values = passed(chain, first)
            continue
        members = {node.key for node in component}
        union: list[object] = []
        for node in component:
            for call in node.calls:
                add_unique(union, forced(chain, call, members))
        if not union:  # a ring no call enters: each member its own entry point
            for node in component:
                node.values = entered_from_outside(ev, node)
            continue
        if len(union) > MAX_VALUES:
            raise Unsettled
        for node in component:
            if ev.declared_fabric(union, node.param, node.ctx) is not union:
                raise Unsettled  # a value made anew at each member: never settles
            node.values = in_order(union)
    return chain.root.values


def entered_from_outside(ev: EvaluatorBase, node: Node) -> list[object]:
    """A member of a cycle no value enters: what it holds asked first (callers.py
    `parameter_from_callers`: called only from inside its own cycle, so an entry point called
    from outside), the same whichever member was asked first."""
    return ev.declared_fabric(
        ev.entry_values(node.function, node.param, node.ctx), node.param, node.ctx
    )


def passed(chain: Chain, node: Node) -> list[object]:
    """What the calls of a parameter in no cycle pass it (EvaluatorBase.parameter_values)."""
    ev = chain.ev
    if not node.found:  # no call in the project: its default, or decided at run time
        return ev.parameter_values(node.function, node.param, node.ctx)
    values: list[object] = []
    for call in node.calls:
        values.extend(forced(chain, call, set()))
    if not values:
        raise Unsettled  # called only with values cut: as before
    return ev.declared_fabric(values, node.param, node.ctx)


def forced(chain: Chain, call: list[object], members: set[Key]) -> list[object]:
    """The values of one call's arguments for a parameter (evaluate.py `force`): a read of a
    parameter of the chain its values, but of the cycle being solved (`members`) nothing
    (the cycle's union holds them)."""
    ev = chain.ev
    values: list[object] = []
    for part in call:
        if not isinstance(part, Read):
            add_unique(values, ev.force([part]))
        elif part.node.key not in members:
            if ev.budget <= 0 or ev.question_budget <= 0:
                raise Unsettled  # the budget's cut, as the walk that nests makes it
            ev.budget -= 1  # the read's evaluation (evaluate.py `ev`)
            ev.question_budget -= 1
            add_unique(values, read_values(part))
    return values


def read_values(read: Read) -> list[object]:
    values = read.node.values
    return bounded(values, read.name, read.ctx) if len(values) > MAX_VALUES else values


def components(chain: Chain) -> list[list[Node]]:
    """The strongly connected components of the graph of parameters passed on from the root,
    those read first (Tarjan's algorithm, its stack explicit)."""
    number: dict[Key, int] = {}
    low: dict[Key, int] = {}
    stack: list[Node] = []
    held: set[Key] = set()  # the keys on `stack`
    found: list[list[Node]] = []

    def visit(node: Node) -> tuple[Node, Iterator[Node]]:
        number[node.key] = low[node.key] = len(number)
        stack.append(node)
        held.add(node.key)
        expand(chain, node)
        reads = (part.node for call in node.calls for part in call if isinstance(part, Read))
        return node, reads

    work = [visit(chain.root)]
    while work:
        node, reads = work[-1]
        for successor in reads:
            if successor.key not in number:
                work.append(visit(successor))
                break
            if successor.key in held:
                low[node.key] = min(low[node.key], number[successor.key])
        else:
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent.key] = min(low[parent.key], low[node.key])
            if low[node.key] == number[node.key]:
                component: list[Node] = []
                while not component or component[-1] is not node:
                    component.append(stack.pop())
                    held.discard(component[-1].key)
                found.append(component)
    return found


def expand(chain: Chain, node: Node) -> None:
    """A node's calls and what each passes it: the parameters read by name become nodes."""
    ev = chain.ev
    found = ev.callers(node.function, node.ctx)
    node.found = bool(found)
    method = is_method(node.ctx.summary, node.function)
    for call, caller in found:
        bound = bound_once(ev, node.function, call, caller, method, node.ctx.summary)
        node.calls.append([part(chain, item) for item in bound.get(node.param.arg, [])])
    if chain.broken:
        raise Unsettled


def part(chain: Chain, item: object) -> object:
    """An argument as the worklist reads it: a name that reads a parameter passed on (a Read
    of that parameter's node), else the argument, evaluated as usual."""
    ev = chain.ev
    if not isinstance(item, Thunk) or not isinstance(item.expr, ast.Name):
        return item
    target = passed_on(ev, item.expr, item.ctx)
    if target is None:
        return item
    function, param = target
    name_key = (id(item.expr), id(item.ctx))
    key = (id(function), param.arg)
    if key == chain.root.key:  # also the name whose evaluation asked the root
        return Read(chain.root, item.expr, item.ctx)
    if ("ev", name_key) in ev.active:
        raise Unsettled  # a cycle through an evaluation running outside the root
    if name_key in ev.memo or ("ev", name_key) in ev.question_cache:
        return item  # known already: read as usual
    if ("callers", key) in ev.active or key in ev.settling and key not in chain.nodes:
        raise Unsettled
    if key in ev.callers_cache or ("callers", key) in ev.question_cache:
        return item
    node = chain.nodes.get(key)
    if node is None:
        node = chain.nodes[key] = Node(key, function, param, item.ctx)
        ev.settling[key] = chain
    return Read(node, item.expr, item.ctx)


def passed_on(ev: EvaluatorBase, name: ast.Name, ctx: Ctx) -> tuple[ast.AST, ast.arg] | None:
    """The function and parameter a name reads when its value is that parameter's callers'
    values and nothing else (evaluate.py `ev_name`, callers.py `parameter`): a parameter of
    the function it is written in, which the function never rebinds, stores into or declares
    global, read in no particular call (no bindings), not `self`, no decorator's."""
    function = ctx.func
    if function is None or isinstance(function, ast.Lambda) or ctx.bindings is not None:
        return None
    if ctx.depth > MAX_DEPTH or name.id in ev.globals_declared(function):
        return None
    param = next((p for p in all_params(function.args) if p.arg == name.id), None)  # type: ignore[attr-defined]
    if param is None or ev.local_bindings(function, ctx.summary).get(name.id):
        return None
    if ev.item_statements(function, name.id) or ev.list_statements(function, name.id):
        return None
    positional = [*function.args.posonlyargs, *function.args.args]  # type: ignore[attr-defined]
    if is_method(ctx.summary, function) and positional and positional[0] is param:
        return None
    if wrapper_self(ev, function, name.id, ctx) is not None:
        return None
    if wrapped_functions(ev, function, name.id, ctx) is not None:
        return None
    return function, param


def keep(chain: Chain, entered: Entered) -> None:
    """Every node but the root (its frame's `leave` keeps it) and every name that read one,
    for the run; for the question only when something was cut (frame.py `leave`)."""
    ev = chain.ev
    hard = ev.cuts != entered.cuts
    for node in (chain.root, *chain.nodes.values()):
        if node is not chain.root:
            kept(ev, ev.callers_cache, "callers", node.key, node.values, hard)
        for call in node.calls:
            for read in call:
                key = (id(read.name), id(read.ctx)) if isinstance(read, Read) else None
                if isinstance(read, Read) and ("ev", key) not in ev.active:  # else its frame's
                    kept(ev, ev.memo, "ev", key, read_values(read), hard)


def kept(
    ev: EvaluatorBase, cache: Memo, kind: str, key: object, values: list[object], hard: bool
) -> None:
    if hard:
        ev.question_cache[(kind, key)] = Kept(values, True, NO_CYCLE, 0)
    else:
        cache[key] = values
