"""Self-dispatch on the runtime class: `self.method()` in a base class's method runs the method
of the class actually instantiated.

A benchmark base class whose `run()` calls `self.create()` and `self.train(model)`, each
defined by every subclass, runs `FusedBench.create` and `FusedBench.train` for a `FusedBench`,
never another subclass's. The evaluator follows that in three places:

- a method found in a base while reading an instance of a subclass (`Inst`, `SelfV`) is an
  `Fn` whose `receiver` is that subclass; the call's context (`Ctx.runtime`) makes `self` in
  the base's method an instance of the subclass, so its `self.create()` is the subclass's;
- a property (descriptors.py) defined in a base or a mixin is read with `self` the instance's
  class the same way;
- the callers of a subclass's method `S.train` include `self.train(model)` written in a
  method of a base `B` of `S`: that call runs `S.train` when `self` is an `S`, so its
  arguments are read in `B`'s method with `self` an `S` (`runtime_ctx`), one subclass at a
  time: the model another subclass creates never reaches `S.train`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.values import ClsV, Fn

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import EvaluatorBase
    from amp_clipfix.analysis.passed import PassedCalls
    from amp_clipfix.analysis.summary import Summary


def receiver_of(klass: ClsV, runtime: ClsV | None) -> ClsV | None:
    """The runtime class to keep on a method of `klass` read for an instance of `runtime`:
    None when it is `klass` itself (the method's own class says it all)."""
    if runtime is None or runtime.node is klass.node:
        return None
    return runtime


def runtime_ctx(
    ev: EvaluatorBase, summary: Summary, func: ast.AST, cls: ast.ClassDef, runtime: ClsV
) -> Ctx:
    """The context of the method `func` of `cls` (in `summary`) read with `self` an instance
    of `runtime`; one per method and class, kept as long as the evaluator (its memo keys)."""
    key = (id(summary), id(func), id(runtime.node))
    if key not in ev.runtime_contexts:
        ev.runtime_contexts[key] = Ctx(summary, func, cls, runtime=runtime)
    return ev.runtime_contexts[key]


def dispatched_caller(
    ev: PassedCalls, call: ast.Call, caller: Ctx, function: ast.AST, cls: ClsV
) -> Ctx | None:
    """The context in which `call` (`self.<name>(...)` in a method of a proper base of `cls`)
    runs `function`, a method `cls` defines or inherits from between: the caller's method read
    with `self` a `cls`. None when the call is no such call."""
    func = call.func
    method = caller.func
    if (
        not isinstance(func, ast.Attribute)
        or not isinstance(func.value, ast.Name)
        or caller.cls is None
        or caller.cls is cls.node
        or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        or not method.args.args
        or method.args.args[0].arg != func.value.id
        or isinstance(caller.runtime, ClsV)
    ):
        return None
    bases = ev.mro(cls)[1:]
    if not any(isinstance(base, ClsV) and base.node is caller.cls for base in bases):
        return None  # the caller's class is no base of `cls`: its `self` is never a `cls`
    dispatched = runtime_ctx(ev, caller.summary, method, caller.cls, cls)
    return dispatched if ev.is_callable(ev.ev(func, dispatched), function, cls.node) else None


MAX_SUBCLASSES = 32  # subclasses a base's method is read for (a framework's base has hundreds)


def runtime_contexts(ev: EvaluatorBase, summary: Summary, node: ast.AST) -> list[Ctx]:
    """The contexts `node`, written in a method of a class `B`, is read in: one per project
    subclass of `B` that inherits the method (its `self` that subclass), and `B`'s own when `B`
    is instantiated itself or has no such subclass. `trainer.fit(model)` in a base's `run()`
    with `trainer = self.make_trainer()` and `model = self.create()` then joins each
    subclass's Trainer with that subclass's module only."""
    ctx = ev.ctx_of(summary, node)
    method, cls = ctx.func, ctx.cls
    if (
        cls is None
        or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        or summary.parent(method) is not cls
        or not may_dispatch(method)
    ):
        return [ctx]
    base = ClsV(cls, summary)
    subclasses = inheriting(ev, base, method)
    if not subclasses:
        return [ctx]
    found = [runtime_ctx(ev, summary, method, cls, sub) for sub in subclasses]
    return [ctx, *found] if instantiated(ev, base) else found


def may_dispatch(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The method reads an attribute of its `self` (else every subclass reads it alike)."""
    name = method.args.args[0].arg if method.args.args else None
    return name is not None and any(
        isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
        for n in ast.walk(method)
    )


def inheriting(
    ev: EvaluatorBase, base: ClsV, method: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[ClsV]:
    """The project's subclasses of `base` (through any number of classes, found by the text of
    their `class` lines, then by value) whose instances run `method` itself."""
    found: list[ClsV] = []
    names = ev.subclass_names(base.node.name.encode("utf-8")) - {base.node.name.encode("utf-8")}
    for name in sorted(names):
        for path in ev.files_naming(name):
            other = ev.summary(path)
            if other is None:
                continue
            for node in other.classes():
                if node.name.encode("utf-8") != name or len(found) >= MAX_SUBCLASSES:
                    continue
                sub = ClsV(node, other)
                bases = ev.mro(sub)[1:]
                if not any(isinstance(b, ClsV) and b.node is base.node for b in bases):
                    continue
                runs = ev.instance_attribute(sub, method.name, method)
                if any(isinstance(v, Fn) and v.node is method for v in runs):
                    found.append(sub)
    return found


def instantiated(ev: EvaluatorBase, cls: ClsV) -> bool:
    """A call in the project builds the class itself (not only its subclasses)."""
    for path in ev.files_naming(cls.node.name.encode("utf-8")):
        other = ev.summary(path)
        if other is None:
            continue
        for call in other.calls(cls.node.name):
            values = ev.ev(call.func, ev.ctx_of(other, call))
            if any(isinstance(v, ClsV) and v.node is cls.node for v in values):
                return True
    return False
