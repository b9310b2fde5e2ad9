"""Lists and tuples as values: what a list of plugins or callbacks may hold when it is not one
display handed straight to the call that uses it.

- `a + b` of two lists or tuples (`build_callbacks(cfg) + [Scheduler(...)]`), `[*a, b]`,
  `list(x)` / `tuple(x)` (also `list(x or [])`), and `dict_a | dict_b`;
- `name.append(x)`, `name.extend(xs)`, `name.insert(i, x)` and `name += xs` in the scope that
  binds the name (a factory that builds its list step by step): their elements join the list's.
  A store that may not run (under an `if`, in a loop) adds an element the list may hold
  (`SeqV.maybe`), decided at run time; an `if` whose test the code decides (a literal through
  names, defaults and callers) is followed: its store runs always, or never.

A list whose length the code does not decide is a `SeqV` (its elements, no positions): the
evaluator's positional questions (`*args`, `x[0]`, unpacking) see no tuple there and decide
them at run time. Containers through parameters are parameters as any other value
(callers.py): `Runner(plugins=[...])` gives `self.plugins` that list.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from amp_clipfix.analysis import names
from amp_clipfix.analysis.bodies import UNREAD_KINDS, Function
from amp_clipfix.analysis.class_members import list_receiver, list_stored_names, list_stores_to
from amp_clipfix.analysis.dict_stores import Stores, item_stores
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk, add_unique
from amp_clipfix.analysis.shapes import first_param
from amp_clipfix.analysis.values import Absent, ClsV, DictV, Fn, Lit, Opaque, TupleV, constant_of

# Pairs of operand values past which `a + b` is one sequence of every element.
MAX_PAIRS = 16


class SeqV:
    """A list or tuple whose elements the code shows, but not their number or order: `items`
    are elements on every path, `maybe` elements only a store that may not run adds; `closed`
    False when it may hold elements the code does not show. (Written by hand, not made by
    `@dataclass`, which compiles a class's methods at every import.)"""

    def __init__(self, items: list[object], maybe: list[object], closed: bool = True) -> None:
        self.items = items
        self.maybe = maybe
        self.closed = closed


def list_receivers(statement: ast.AST) -> set[str]:
    """The names whose list `statement` may add to (dict_stores.item_stores' receivers)."""
    receiver = list_receiver(statement)
    return {receiver.id} if isinstance(receiver, ast.Name) else set()


def added_expression(statement: ast.stmt) -> tuple[ast.expr, bool] | None:
    """What a store adds, and whether it is one element (`append`, `insert`) or a sequence of
    them (`extend`, `+=`)."""
    if isinstance(statement, ast.AugAssign):
        return statement.value, False
    call = statement.value  # type: ignore[attr-defined]
    if call.func.attr == "append" and len(call.args) == 1 and not call.keywords:
        return call.args[0], True
    if call.func.attr == "insert" and len(call.args) == 2 and not call.keywords:
        return call.args[1], True
    if call.func.attr == "extend" and len(call.args) == 1 and not call.keywords:
        return call.args[0], False
    return None


def constant(value: object) -> tuple[bool, object]:
    """The Python value of a literal (`True`, `"16-mixed"`, `-1`), with whether it is one."""
    node = value.node if isinstance(value, Lit) else None
    if isinstance(node, ast.Constant):
        return True, node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
    ):
        return True, -node.operand.value
    return False, None


def truth(value: object) -> bool | None:
    """Whether a literal is true; None for anything else."""
    known, python = constant(value)
    return bool(python) if known else None


class Sequences(EvaluatorBase):
    """Lists and tuples built by operators, constructors and stores."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.list_cache: dict[int, Stores] = {}  # list_statements, by scope
        self.attribute_stores: dict[int, dict[str, list[ast.stmt]]] = {}  # by method
        self.storing_cache: dict[int, tuple[ast.ClassDef, dict[str, list[Function]]]] = {}

    def sequence_elements(self, values: Iterable[object]) -> Iterator[tuple[object, bool]]:
        """The values of the elements of the lists and tuples among `values`, each with
        whether its element is one on every path (False: only a store that may not run adds
        it); any other value as it is (a plugin passed alone)."""
        for group, surely in self.element_groups(values):
            for element in group:
                yield element, surely

    def element_groups(self, values: Iterable[object]) -> Iterator[tuple[list[object], bool]]:
        """Per element of the lists among `values`: the values it may have, and whether it is
        an element on every path."""
        for value in values:
            if isinstance(value, (TupleV, SeqV)):
                items = value.items if isinstance(value, TupleV) else [[v] for v in value.items]
                for item in items:
                    yield self.force(item), True
            if isinstance(value, SeqV):
                for entry in value.maybe:
                    yield self.force([entry]), False
            elif not isinstance(value, TupleV):
                yield [value], True

    def holds(self, values: list[object], test: Callable[[object], bool]) -> bool | None:
        """Whether the lists `values` may be hold an element that passes `test`: True when
        each of them holds, on every path, an element whose every value passes it; False
        when one is held on some paths only (one of several lists a choice makes, a store
        that may not run, `ClipGradients() if flag else None`); None when none is held."""
        states: list[bool | None] = []
        for value in values:
            found = [
                surely and all(test(v) for v in group)
                for group, surely in self.element_groups([value])
                if any(test(v) for v in group)
            ]
            states.append(True if True in found else (False if found else None))
        if all(state is None for state in states):
            return None
        return all(state is True for state in states)

    def sequence_parts(self, values: list[object]) -> tuple[list[object], list[object], bool]:
        """Every element of the sequences among `values` (surely, maybe), and whether they
        are all the sequences it may be (False: a value that is none, decided at run time)."""
        sure: list[object] = []
        maybe: list[object] = []
        closed = True
        for value in values:
            if isinstance(value, TupleV):
                for item in value.items:
                    add_unique(sure, item)
            elif isinstance(value, SeqV):
                add_unique(sure, value.items)
                add_unique(maybe, value.maybe)
                closed = closed and value.closed
            else:
                closed = False
        return sure, maybe, closed

    # -- expressions ---------------------------------------------------------------------------

    def ev_display(self, node: ast.List | ast.Tuple, ctx: Ctx) -> list[object]:
        """`[*a, b]`: a tuple of known length when every spread is one, else a `SeqV`."""
        items: list[list[object]] = []
        exact = True
        sure: list[object] = []
        maybe: list[object] = []
        closed = True
        for element in node.elts:
            if not isinstance(element, ast.Starred):
                items.append([Thunk(element, ctx)])
                add_unique(sure, [Thunk(element, ctx)])
                continue
            spread = self.ev(element.value, ctx)
            tuples = [v for v in spread if isinstance(v, TupleV)]
            if len(spread) == 1 and len(tuples) == 1:
                items.extend(tuples[0].items)
            else:
                exact = False
            inner, inner_maybe, inner_closed = self.sequence_parts(spread)
            add_unique(sure, inner)
            add_unique(maybe, inner_maybe)
            closed = closed and inner_closed
        if exact:
            return [TupleV(items)]
        return [SeqV(sure, maybe, closed)]

    def ev_ifexp(self, node: ast.IfExp, ctx: Ctx) -> list[object]:
        """`a if test else b`: the branch a test the code decides takes (test_truth), else
        both (`ClipGradients(...) if cfg["clip"] else None`)."""
        tests = self.test_truth(node.test, ctx)
        if tests == {True}:
            return self.ev(node.body, ctx)
        if tests == {False}:
            return self.ev(node.orelse, ctx)
        return self.ev(node.body, ctx) + self.ev(node.orelse, ctx)

    def ev_boolop(self, node: ast.BoolOp, ctx: Ctx) -> list[object]:
        """`a or b` / `a and b`: every operand's values, but the operands after one whose
        every value decides the result (`plugins or []` where `plugins` is a list the code
        shows non-empty) are never reached, and an operand whose every value passes the
        result on (a falsy one in `or`) is never the result. Truth is decided for literals and
        for lists, tuples and dicts the code shows whole; anything else may be either."""
        stops = isinstance(node.op, ast.Or)  # `or` stops at a true operand, `and` at a false
        values: list[object] = []
        for index, operand in enumerate(node.values):
            found = self.ev(operand, ctx)
            last = index == len(node.values) - 1
            states = {value_truth(v) for v in found}
            if not last and states == {not stops}:
                continue  # never the result: the next operand is
            values.extend(found)
            if states == {stops}:
                break  # the result: the operands after it never run
        return values

    def ev_binop(self, node: ast.BinOp, ctx: Ctx) -> list[object]:
        """`a + b` of lists or tuples, `a | b` of dicts; any other operation is decided at run
        time."""
        if not isinstance(node.op, (ast.Add, ast.BitOr)):
            return [Opaque(node, ctx.summary)]
        left, right = self.ev(node.left, ctx), self.ev(node.right, ctx)
        if isinstance(node.op, ast.BitOr):
            dicts = [(a, b) for a in left for b in right]
            if dicts and all(isinstance(a, DictV) and isinstance(b, DictV) for a, b in dicts):
                return [merged(a, b) for a, b in dicts[:MAX_PAIRS]]  # type: ignore[arg-type]
            return [Opaque(node, ctx.summary)]
        sequences = (TupleV, SeqV)
        if not left or not right or not all(isinstance(v, sequences) for v in (*left, *right)):
            return [Opaque(node, ctx.summary)]
        if len(left) * len(right) <= MAX_PAIRS and all(
            isinstance(v, TupleV) for v in (*left, *right)
        ):
            return [TupleV([*a.items, *b.items]) for a in left for b in right]  # type: ignore[attr-defined]
        sure, maybe, closed = self.sequence_parts([*left, *right])
        return [SeqV(sure, maybe, closed)]

    def test_truth(self, test: ast.AST, ctx: Ctx) -> set[bool | None]:
        """Whether a test is true, for each value it may have: its literals, `not x`, and
        `a == b`, `a != b`, `a in xs`, `a not in xs` of literals and sequences of literals
        the code shows; None where it is decided at run time."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return {None if t is None else not t for t in self.test_truth(test.operand, ctx)}
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = test.ops[0]
            left = self.ev(test.left, ctx)
            right = self.ev(test.comparators[0], ctx)
            if (
                isinstance(op, (ast.Is, ast.IsNot))
                and constant_of(test.comparators[0]) == (True, None)
                and left
                and not any(isinstance(v, (Lit, Opaque)) for v in left)
            ):
                return {isinstance(op, ast.IsNot)}  # an object the code builds is no None
            return compare(op, left, right, self.force)
        return {truth(v) for v in self.ev(test, ctx)}

    def call_sequence(self, call: ast.Call, ctx: Ctx) -> list[object]:
        """`list()` / `tuple()`: empty; `list(x)`: the elements of `x` (a tuple stays one)."""
        if not call.args and not call.keywords:
            return [TupleV([])]
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
            return [Opaque(call, ctx.summary)]
        values = self.ev(call.args[0], ctx)
        if all(isinstance(v, TupleV) for v in values):
            return values
        sure, maybe, closed = self.sequence_parts(values)
        if not sure and not maybe and not closed:
            return [Opaque(call, ctx.summary)]
        return [SeqV(sure, maybe, closed)]

    def call_external(self, qname: str, call: ast.Call, ctx: Ctx) -> list[object]:
        if names.kind_of(qname) is names.Kind.SEQUENCE:
            return self.call_sequence(call, ctx)
        return super().call_external(qname, call, ctx)  # type: ignore[misc]

    # -- stores --------------------------------------------------------------------------------

    def list_statements(self, scope: ast.AST, name: str) -> list[tuple[ast.stmt, bool]]:
        """The statements of a scope that may add to the list `name` holds, each with whether
        it runs whenever the name is bound; indexed once per scope."""
        key = id(scope)
        if key not in self.list_cache:
            if isinstance(scope, ast.Module) or any(
                isinstance(node, (ast.AugAssign, ast.Expr)) and list_receivers(node)
                for node in self.statements(scope)  # both statements
            ):
                self.list_cache[key] = item_stores(scope, list_receivers)  # type: ignore[arg-type]
            else:
                self.list_cache[key] = {}
        return self.list_cache[key].get(name, [])

    def with_item_assignments(
        self, values: list[object], scope: ast.AST, name: str, ctx: Ctx
    ) -> list[object]:
        values = super().with_item_assignments(values, scope, name, ctx)  # type: ignore[misc]
        stores = self.list_statements(scope, name)
        if not stores:
            return values
        runs = [
            (statement, True if always else self.runs(statement, scope, ctx))
            for statement, always in stores
        ]
        return self.with_added(values, runs, ctx)

    def with_added(
        self, values: list[object], stores: list[tuple[ast.stmt, bool | None]], ctx: Ctx
    ) -> list[object]:
        """The lists among `values` with the elements the stores add (each with whether it
        runs: True always, None maybe, False never) as one `SeqV`; where no list is known (a
        parameter no caller fills) a `SeqV` that may hold more."""
        sure: list[object] = []
        maybe: list[object] = []
        closed = True
        for statement, runs in stores:
            added = added_expression(statement)
            if added is None:
                closed = False
                continue
            if runs is False:
                continue
            into = sure if runs else maybe
            expression, single = added
            if single:
                add_unique(into, [Thunk(expression, ctx)])
                continue
            inner, inner_maybe, inner_closed = self.sequence_parts(self.ev(expression, ctx))
            add_unique(into, inner)
            add_unique(maybe, inner_maybe)
            closed = closed and inner_closed
        kept = [v for v in values if not isinstance(v, (TupleV, SeqV))]
        if len(kept) == len(values):
            return [*values, SeqV(sure, maybe, closed=False)]
        base, base_maybe, base_closed = self.sequence_parts(values)
        add_unique(base, sure)
        add_unique(base_maybe, maybe)
        return [*kept, SeqV(base, base_maybe, closed and base_closed)]

    def class_attribute(
        self, klass: ClsV, attr: str, bound: bool, runtime: ClsV | None = None
    ) -> list[object]:
        """`self.<attr>` with what the class's methods add to the list it holds
        (`self.callbacks.append(...)`): a store in `__init__` runs as any store in a function
        does (runs), one in another method only if that method is called: maybe."""
        values: list[object] = super().class_attribute(klass, attr, bound, runtime)  # type: ignore[misc]
        if any(isinstance(v, Fn) for v in values):
            return values
        stores: list[tuple[ast.stmt, bool | None]] = []
        for method in self.storing_methods(klass.node).get(attr, ()):
            found = self.attribute_list_stores(method).get(attr, [])
            ctx = self.ctx(klass.summary, method, klass.node)
            for statement in found:
                runs = self.runs(statement, method, ctx) if method.name == "__init__" else None
                stores.append((statement, runs))
            if found:
                values = self.with_added(values, stores, ctx)
                stores = []
        return values

    def attribute_list_stores(self, method: ast.AST) -> dict[str, list[ast.stmt]]:
        """The statements of a method that add to a list `self.<attr>` holds, by attr."""
        key = id(method)
        if key not in self.attribute_stores:
            found = list_stores_to(first_param(method), self.statements(method))
            self.attribute_stores[key] = found
        return self.attribute_stores[key]

    def storing_methods(self, cls: ast.ClassDef) -> dict[str, list[Function]]:
        """The methods of a class that add to a list `self.<attr>` holds, by attr, in their
        order; once per class, from bodies not read for good (class_members.py): a method
        that adds to none is not read for the class's attributes."""
        key = id(cls)
        if key not in self.storing_cache:
            found: dict[str, list[Function]] = {}
            for method in cls.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if type(method) in UNREAD_KINDS:  # looked at, not read for good
                        names = list_stored_names(method)
                    else:
                        names = list(self.attribute_list_stores(method))
                    for name in names:
                        found.setdefault(name, []).append(method)
            self.storing_cache[key] = (cls, found)
        return self.storing_cache[key][1]

    def augmented(self, binding: ast.AugAssign, ctx: Ctx) -> list[object] | None:
        """`name += xs` of a list adds elements (with_item_assignments), no value of its own;
        None for any other augmented assignment."""
        if not isinstance(binding.op, ast.Add):
            return None
        values = self.ev(binding.value, ctx)
        if values and all(isinstance(v, (TupleV, SeqV)) for v in values):
            return []
        return None

    def never_runs(self, node: ast.AST, ctx: Ctx) -> bool:
        """Whether the statement holding `node` sits under an `if` the code decides false (a
        plugin appended only `if fp16:` where every caller passes False)."""
        summary = ctx.summary
        statement = summary.parent(node)
        while statement is not None and not isinstance(statement, ast.stmt):
            statement = summary.parent(statement)
        if statement is None:
            return False
        scope = ctx.func if ctx.func is not None else summary.tree
        return self.runs(statement, scope, ctx) is False

    def runs(self, statement: ast.stmt, scope: ast.AST, ctx: Ctx) -> bool | None:
        """Whether a store the binding's block does not hold runs: every `if` between it and
        the scope decided by its test's literals (True: always, False: never); None when
        anything else (a loop, a `try`, a test decided at run time) stands between them."""
        summary = ctx.summary
        child: ast.AST = statement
        current = summary.parent(statement)
        decided = True
        while current is not None and current is not scope:
            if isinstance(current, ast.If):
                tests = self.test_truth(current.test, ctx)
                if len(tests) != 1 or None in tests:
                    return None
                in_body = any(child is s for s in current.body)
                if tests.pop() is not in_body:
                    decided = False
            elif not isinstance(current, (ast.With, ast.AsyncWith)):
                return None
            child, current = current, summary.parent(current)
        return decided


def merged(left: DictV, right: DictV) -> DictV:
    """`left | right`: the right one's keys win where it surely holds them."""
    entries = {key: list(items) for key, items in left.entries.items()}
    for key, items in right.entries.items():
        entries[key] = list(items)
    return DictV(entries, left.closed and right.closed)


def value_truth(value: object) -> bool | None:
    """Whether a value is true, where the code decides it: a literal, a list or tuple of known
    length (a `SeqV` with elements on every path is non-empty), a closed dict."""
    if isinstance(value, TupleV):
        return bool(value.items)
    if isinstance(value, SeqV):
        return True if value.items else None
    if isinstance(value, DictV):
        return (
            True
            if value.entries
            and not any(isinstance(v, Absent) for items in value.entries.values() for v in items)
            else (False if value.closed and not value.entries else None)
        )
    return truth(value)


def compare(
    op: ast.cmpop,
    left: list[object],
    right: list[object],
    force: Callable[[list[object]], list[object]],
) -> set[bool | None]:
    """`a == b`, `a != b`, `a is None`, `a is not None`, `a in xs`, `a not in xs` for each pair
    of the values the sides may have, where both are literals (and `xs` a list or tuple of
    literals the code shows); None for anything else."""
    lefts = [constant(v) for v in left]
    if not lefts or not all(known for known, _ in lefts):
        return {None}
    if isinstance(op, (ast.In, ast.NotIn)):
        tuples = [v for v in right if isinstance(v, TupleV)]
        if not right or len(tuples) != len(right):
            return {None}
        containers = [[constant(v) for v in force([t for i in c.items for t in i])] for c in tuples]
        if not all(known for items in containers for known, _ in items):
            return {None}
        found: set[bool | None] = {a in [b for _, b in c] for _, a in lefts for c in containers}
        return found if isinstance(op, ast.In) else {not t for t in found}
    rights = [constant(v) for v in right]
    if not rights or not all(known for known, _ in rights):
        return {None}
    pairs = [(a, b) for _, a in lefts for _, b in rights]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        same: set[bool | None] = {a == b for a, b in pairs}
        return same if isinstance(op, ast.Eq) else {not t for t in same}
    if isinstance(op, (ast.Is, ast.IsNot)) and all(b is None for _, b in pairs):
        none: set[bool | None] = {a is None for a, _ in pairs}
        return none if isinstance(op, ast.Is) else {not t for t in none}
    return {None}
