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
from amp_clipfix.analysis.values import ClsV

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
