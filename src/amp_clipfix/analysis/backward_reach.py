"""Whether a reading of a function may meet a backward: ACF005's `manual_backward`, ACF006's
Fabric `backward`, asked before the reading is made.

A finding of either rule is a clip after a backward in one reading (order.events of a function,
with the helpers it enters HELPER_DEPTH levels down and the closures its steps are given). A
backward is an event only of a call its rule's classifier makes one of: a call of an attribute
named so (`self.manual_backward(loss)`, `fabric.backward(loss)`), or a call whose callee holds
that method handed on as a value (`backward = fabric.backward`, a helper given
`self.manual_backward`). Where some file writes the attribute other than as a callee
(`written_events.hands_on`), any call may be one and every reading is made. Otherwise a
reading none of whose calls is written as a backward, or may run a project function that makes
one within the levels left, meets no backward and reports nothing: it is not made, and neither
are the evaluator's questions of every call it would enter.

Which functions a call may run is reach.CallReach's index of the project's functions by name,
with the rule's event names added to its own: a call `x.name(...)` may reach a backward where
`name` is an event name, the project gives `name` a value other than as a function anywhere,
or a function defined under `name` (any class's, whatever `x` holds) may reach one; any call
of a parameter, a local, a renamed import, a call's result or an item may. One receiver is
typed: in a method read for its class `K` (the reading's own, and the methods its `self`
calls, found on `K`), `self.name(...)` and `super().name(...)` run what the evaluator finds on
`K`'s classes (`mro`: `self` is `K`'s instance there, classes.instance_attribute), so only
their members named `name` are looked at: a method (read the same way), anything else (a
value, a method that assigns `self.name`, a class with `__getattr__`) may. A class's method
named like a `self` method of another class no longer opens every reading that calls it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis.bound_names import FileNames, plain_decorator
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES
from amp_clipfix.analysis.order import (
    FUNCTIONS,
    HELPER_DEPTH,
    Body,
    Classify,
    EventKind,
    calls_of,
    statements,
)
from amp_clipfix.analysis.reach import EVENT_METHODS, CallReach
from amp_clipfix.analysis.recording import exists, python_texts
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.values import ClsV, Fn, Inst, Opaque, SelfV

Function = ast.FunctionDef | ast.AsyncFunctionDef
Backward = Callable[[ast.Call], bool]  # a call written as a backward is one (the classifier)
# Members that make any attribute of an instance a value the class computes.
DYNAMIC = ("__getattr__", "__getattribute__")
# Decorators after which a method's first parameter is no instance of its class.
NOT_BOUND = frozenset({"staticmethod", "classmethod"})


class BackwardReach(CallReach):
    """CallReach's index with `events` (attribute names a call of which may be a backward)
    added to its own; `may_meet` answers per reading. `handed_on`: the recording predicate
    that says a file hands the backward on as a value (written_events.py); `written`: a call
    the rule's classifier may make a backward of by how it is written."""

    def __init__(
        self,
        facts: ProjectFacts,
        events: frozenset[str],
        handed_on: str,
        written: Callable[[ast.Call], bool],
    ) -> None:
        super().__init__(facts)
        self.backwards = events
        self.events = events | EVENT_METHODS | TORCH_CLIP_NAMES
        self.handed_on = handed_on
        self.written = written
        self.anywhere: bool | None = None  # some file hands the backward on
        self.typed: dict[tuple[int, int, int], bool] = {}  # (function, class, levels)
        self.members: dict[tuple[int, str, int], bool] = {}  # (class, name, levels)
        self.read = 0  # readings asked about
        self.left = 0  # readings that meet no backward (not made)

    def search_attribute(self, name: str, levels: int) -> bool:
        return name in self.events or super().search_attribute(name, levels)

    def call_may_reach(
        self, call: ast.Call, names: FileNames, local: set[str], levels: int
    ) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in self.events:
            return True
        return super().call_may_reach(call, names, local, levels)

    def over_budget(self, paths: list[Path]) -> bool:
        """Any of `paths` is a module the evaluator has not loaded: the gate parses nothing of
        its own (a parse costs more than most readings it could leave out)."""
        summaries = self.evaluator.summaries
        return any(path not in self.files and path not in summaries for path in paths)

    def may_meet(self, file: FileFacts, function: Body, backward: Backward) -> bool:
        """A reading of `function` (the module's own code, or a function) may meet a
        backward (see the module's docstring); `backward`: the rule's classifier's answer
        whether a call written as one is one there (asked of no other call)."""
        self.read += 1
        if self.anywhere is None:
            self.anywhere = exists(self.contents, ("fn", self.handed_on))
        meets = self.anywhere or self.reading_reaches(file, function, backward)
        self.left += not meets
        return meets

    def reading_reaches(self, file: FileFacts, function: Body, backward: Backward) -> bool:
        """Some call of the reading is a backward, or may run a project function that may
        make one within the helper levels below it: the project functions and instances a
        call may run are the evaluator's answer (callables.callees asks the same question of
        the same context, so a reading made after it finds the answer kept)."""
        calls = [call for statement in statements(function.body) for call in calls_of(statement)]
        if any(gives_closure(call) or self.written(call) and backward(call) for call in calls):
            return True  # a backward there, or a step given its closure
        return any(self.reading_call_reaches(file, call) for call in calls)

    def reading_call_reaches(self, file: FileFacts, call: ast.Call) -> bool:
        func = call.func
        levels = HELPER_DEPTH - 1  # a helper the reading enters enters two levels more
        for value in self.facts.values(file, func):
            if isinstance(value, Fn):
                if self.helper_reaches(file, func, value, levels):
                    return True
            elif isinstance(value, Inst):
                if self.member_reaches(value.cls, "__call__", levels):
                    return True
            elif (
                isinstance(value, Opaque)
                and isinstance(value.node, ast.Attribute)
                and value.node.attr in self.backwards
                and value.node is not func
            ):
                return True  # a backward handed on (not without `anywhere`)
        return False

    def helper_reaches(self, file: FileFacts, func: ast.expr, helper: Fn, levels: int) -> bool:
        """The helper, entered through a call of `func`, may meet a backward: a method called
        on a receiver the evaluator knows the classes of is read with `self` each of them
        (order.helper_events binds `self` to that receiver); any other as CallReach reads."""
        path = helper.summary.path
        if self.summary_of(path) is None:
            return True
        self.names_of(path, python_texts(self.contents)[path])
        node = helper.node
        classes = None
        if helper.bound and isinstance(func, ast.Attribute) and bound_parameter(node):
            classes = self.receiver_classes(file, func.value)
        if classes is None:
            return self.reaches(path, node, levels)
        return any(self.method_reaches(path, node, cls, levels) for cls in classes)

    def receiver_classes(self, file: FileFacts, receiver: ast.expr) -> list[ClsV] | None:
        """The project classes of the instances `receiver` may hold (`self`, an instance the
        project makes); None where it may hold anything else."""
        found: list[ClsV] = []
        for value in self.facts.values(file, receiver):
            if not isinstance(value, (SelfV, Inst)):
                return None
            found.append(value.cls)
        return found or None

    def method_reaches(self, path: Path, method: Function, cls: ClsV, levels: int) -> bool:
        """Running `method` with its `self` an instance of `cls` may meet a backward within
        `levels` more helper levels: `self.name(...)` looked up on `cls` (`member_reaches`),
        any other call as CallReach answers it."""
        key = (id(method), id(cls.node), levels)
        known = self.typed.get(key)
        if known is None:
            self.typed[key] = True  # recursion: may
            known = self.typed[key] = self.search_method(path, method, cls, levels)
        return known

    def search_method(self, path: Path, method: Function, cls: ClsV, levels: int) -> bool:
        names = self.names_of(path, python_texts(self.contents)[path])
        this = bound_parameter(method)
        if this is None:
            return self.reaches(path, method, levels)
        local = {a.arg for a in all_params(method.args)}
        for node in ast.walk(method):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                local.add(node.id)
                if node.id == this:
                    return self.reaches(path, method, levels)  # `self` bound again
        return any(
            self.self_call_reaches(call, this, cls, names, local, levels)
            for statement in statements(method.body)
            for call in calls_of(statement)
        )

    def self_call_reaches(
        self,
        call: ast.Call,
        this: str,
        cls: ClsV,
        names: FileNames,
        local: set[str],
        levels: int,
    ) -> bool:
        """A call of a method read with its `self` (`this`) a `cls` may reach a backward:
        `self.name(...)`, `super().name(...)` and `self(...)` (its `__call__`) by the members
        of `cls`, others as CallReach answers."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr not in self.events:
            if on_self(func.value, this):
                return levels > 0 and self.member_reaches(cls, func.attr, levels - 1)
        elif isinstance(func, ast.Name) and func.id == this:
            return levels > 0 and self.member_reaches(cls, "__call__", levels - 1)
        return self.call_may_reach(call, names, local, levels)

    def member_reaches(self, cls: ClsV, name: str, levels: int) -> bool:
        """What `self.<name>` of an instance of `cls` may run reaches a backward: a method of
        one of its project classes so named does (read with `self` a `cls`), or some member
        of them gives the name another value."""
        key = (id(cls.node), name, levels)
        known = self.members.get(key)
        if known is None:
            self.members[key] = True  # recursion: may
            known = self.members[key] = self.search_member(cls, name, levels)
        return known

    def search_member(self, cls: ClsV, name: str, levels: int) -> bool:
        if not name.isascii():
            return True
        evaluator = self.evaluator
        for klass in evaluator.mro(cls):
            if not isinstance(klass, ClsV):
                continue  # a library class: library code, never entered
            members = evaluator.class_members(klass.node)
            if any(dynamic in members for dynamic in DYNAMIC):
                return True
            for statement in members.get(name, ()):
                if not isinstance(statement, FUNCTIONS) or statement.name != name:
                    return True  # a value, or a method that assigns `self.<name>`
                if self.summary_of(klass.summary.path) is None:
                    return True
                if self.method_reaches(klass.summary.path, statement, cls, levels):
                    return True
        return False


def bound_parameter(method: Function) -> str | None:
    """The method's first parameter where it holds the instance (plain decorators only,
    neither a static nor a class method), else None."""
    positional = [*method.args.posonlyargs, *method.args.args]
    decorators = method.decorator_list
    if not positional or not all(plain_decorator(d) for d in decorators):
        return None
    if any(isinstance(d, ast.Name) and d.id in NOT_BOUND for d in decorators):
        return None
    if any(isinstance(d, ast.Attribute) and d.attr in NOT_BOUND for d in decorators):
        return None
    return positional[0].arg


def backward_of(classify: Classify, file: FileFacts) -> Backward:
    """The classifier's answer whether a call of `file` is a backward (asked as the reading
    asks it: the same questions of the same context)."""

    def backward(call: ast.Call) -> bool:
        seen = classify(file, call)
        return seen is not None and seen.kind is EventKind.BACKWARD

    return backward


def gives_closure(call: ast.Call) -> bool:
    """A step given a `closure=` (or a `**` spread): the classifiers' step (no positional
    argument) runs it first (order.closure_events, callables.step_closure)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "step"
        and any(k.arg in ("closure", None) for k in call.keywords)
    )


def on_self(receiver: ast.expr, this: str) -> bool:
    """`self` itself, or `super()` (its bases' members: a part of its classes')."""
    if isinstance(receiver, ast.Name):
        return receiver.id == this
    return (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
        and not receiver.args
        and not receiver.keywords
    )
