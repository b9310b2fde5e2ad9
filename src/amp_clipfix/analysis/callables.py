"""Callables as values, for the order of calls (order.py): what a call runs and how the names of
the function it runs are written at the call.

- A call whose callee is a project function (`Fn`: a function, a bound method `amp.clip`, a
  closure defined in the function read) runs its body; a call of an instance of a project class
  (`step(loss)` where `step = BackwardClip(...)`) runs the class's `__call__` (`callees`).
- An expression of the function entered is written at the call by putting the call's
  arguments in place of its parameters, and the call's receiver in place of `self`
  (`self.scaler` in `AmpHelper.backward` is `amp.scaler` at `amp.backward(loss)`), or as it
  is for a closure's free names, which are the enclosing function's own (`written_at`).
- A function that clips but leaves the backward or the step to whoever calls it is read in its
  callers, in any module (`caller_readings`): a clip helper imported from another module
  (`from utils import dispatch_clip_grad`, `import utils; utils.f`, a relative import) or the
  `clip` method of a project class wrapping a GradScaler, read where the training loop calls it.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.shapes import all_params, first_param
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, Fn, Inst, Opaque, SelfV

if TYPE_CHECKING:
    from amp_clipfix.analysis.facts import FileFacts, ProjectFacts

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Callers above a helper read for a clip that leaves its backward or step to them.
CALLER_DEPTH = 3


def callees(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, ctx: Ctx | None = None
) -> list[Fn]:
    """The project functions a call may run: its callee's `Fn` values, and the `__call__` of a
    project instance it may hold (bound to the instance). `ctx`: the context the call is
    evaluated in (a helper entered through a call: analysis/entered.py), else its own."""
    found: list[Fn] = []
    evaluator = facts.evaluator
    values = (
        facts.values(file, call.func)
        if ctx is None
        else evaluator.force(evaluator.ev(call.func, ctx))
    )
    for value in values:
        if isinstance(value, Fn):
            found.append(value)
        elif isinstance(value, Inst):
            method = dunder_call(facts, value.cls)
            if method is not None:
                found.append(method)
    return found


def dunder_call(facts: ProjectFacts, cls: ClsV) -> Fn | None:
    """The `__call__` of a project class or of its nearest project base that defines one."""
    for klass in facts.evaluator.mro(cls):
        if not isinstance(klass, ClsV):
            continue
        for statement in klass.node.body:
            if isinstance(statement, FUNCTIONS) and statement.name == "__call__":
                return Fn(statement, klass.summary, klass.node, bound=True)
    return None


def receiver(fn: Fn, call: ast.Call) -> ast.expr | None:
    """What `self` is at the call of a bound method: `amp` in `amp.clip(...)`, the instance
    itself in `step(loss)` (its `__call__`)."""
    if not fn.bound:
        return None
    if fn.node.name == "__call__" and not (
        isinstance(call.func, ast.Attribute) and call.func.attr == "__call__"
    ):
        return call.func
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def bindings(fn: Fn, call: ast.Call) -> dict[str, ast.expr]:
    """The function's parameters the call binds, by name, to the caller's expressions (`self`
    of a bound method to its receiver); a `*args` stops the positional ones."""
    positional = [p.arg for p in (*fn.node.args.posonlyargs, *fn.node.args.args)]
    mapping: dict[str, ast.expr] = {}
    if fn.bound and positional:
        this = receiver(fn, call)
        if this is not None:
            mapping[positional[0]] = this
        positional = positional[1:]
    for name, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        mapping[name] = arg
    params = {p.arg for p in all_params(fn.node.args)}
    for keyword in call.keywords:
        if keyword.arg in params:
            mapping[keyword.arg] = keyword.value
    return mapping


def written_at(
    facts: ProjectFacts, fn: Fn, call: ast.Call, node: ast.expr, reading: ast.AST
) -> ast.expr | None:
    """The expression `node` of the function `fn` as it can be written at `call`, a statement
    of `reading`: the names it reads that are parameters become the call's arguments; a
    closure's free names (`fn` defined inside `reading`, the name bound by neither) stay as
    they are. None where a name is the function's own local, or a parameter the call leaves
    to its default, or a global of another module."""
    bound = bindings(fn, call)
    local = facts.evaluator.local_bindings(fn.node)
    params = {p.arg for p in all_params(fn.node.args)}
    closure = nested_in(facts, fn, reading)
    ok = True

    class Put(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            nonlocal ok
            if name.id in bound:
                return copy.deepcopy(bound[name.id])
            if name.id in params or name.id in local or not closure:
                ok = False
            return name

    written = Put().visit(copy.deepcopy(node))
    return written if ok and isinstance(written, ast.expr) else None


def nested_in(facts: ProjectFacts, fn: Fn, reading: ast.AST) -> bool:
    """The function is defined inside `reading` (a closure: its free names are the enclosing
    function's, or the module's when `reading` is the module of its file)."""
    if isinstance(reading, ast.Module):
        return fn.summary.tree is reading
    current = fn.summary.parent(fn.node)
    while current is not None:
        if current is reading:
            return True
        current = fn.summary.parent(current)
    return False


Body = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
Reading = tuple["FileFacts", Body, ast.Call]
# (summary, call) -> the call's callee may hold a project instance (analysis/reach.py); None: any.
Holds = Callable[[Summary, ast.Call], bool] | None
# (a call, its caller's context) -> worth reading (CallerIndex.callers_kept)
Keep = Callable[[ast.Call, Ctx], bool]


def caller_readings(
    facts: ProjectFacts,
    file: FileFacts,
    function: ast.AST,
    depth: int = CALLER_DEPTH,
    holds: Holds = None,
    last: Keep | None = None,
    follow: Callable[[ast.Call], bool] | None = None,
) -> Iterator[Reading]:
    """The functions (or modules) of the project that call `function`, each with its file and
    the call, then their callers in turn (`depth` levels): where a helper's clip meets the
    backward and the step its callers run. `last`: the calls of the last level worth reading
    (the others are not asked whether they call the helper: CallerIndex.callers_kept).
    `follow`: asked once a reading is consumed, whether its function's callers are read
    through that call (None: all are).

    A method of a base class reached from a subclass's method by dispatch (`self.fit_batch()`
    in `Base._train` runs `Sub.fit_batch` when `self` is a `Sub`: analysis/dispatch.py) is
    read for that subclass, and so is the method calling it on `self` in turn: their callers
    are only the calls whose receiver may be an instance of it (`self_class`). A call on an
    instance of another class runs the other class's method, never the helper (hundreds of
    scripts each training their own subclass of one framework class)."""
    yielded: set[int] = set()
    followed: set[tuple[int, int]] = set()
    frontier: list[tuple[FileFacts, ast.AST, ClsV | None]] = [(file, function, None)]
    for level in range(depth):
        following: list[tuple[FileFacts, ast.AST, ClsV | None]] = []
        keep = last if level == depth - 1 else None
        for where, helper, runtime in frontier:
            for call, reading, caller_file, ctx in direct_callers(
                facts, where, helper, holds, keep, runtime
            ):
                if id(call) not in yielded:
                    yielded.add(id(call))
                    yield caller_file, reading, call
                own = self_class(call, reading, ctx, runtime)
                if (id(call), id(own)) in followed:
                    continue  # followed already for that class
                if isinstance(reading, FUNCTIONS) and (follow is None or follow(call)):
                    followed.add((id(call), id(own)))
                    following.append((caller_file, reading, own))
        frontier = following


def self_class(call: ast.Call, reading: ast.AST, ctx: Ctx, runtime: ClsV | None) -> ClsV | None:
    """The class the caller's `self` is an instance of wherever `call` runs the helper: the
    subclass a dispatched call is read for, or the helper's own where the call is on the
    caller's `self` (one object); None when any."""
    if isinstance(ctx.runtime, ClsV):
        return ctx.runtime
    if runtime is None or ctx.cls is None or not isinstance(reading, FUNCTIONS):
        return None
    if any(
        not isinstance(d, ast.Name) or d.id in ("staticmethod", "classmethod")
        for d in reading.decorator_list
    ):
        return None
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == first_param(reading)
    ):
        return runtime
    return None


def may_be_instance(facts: ProjectFacts, call: ast.Call, ctx: Ctx, cls: ClsV) -> bool:
    """The call's receiver may be an instance of `cls` or of a subclass: False only when every
    value it may hold is an instance of a known class (made by a call, or `self` read for a
    known subclass) that is not."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return True
    evaluator = facts.evaluator
    values = evaluator.force(evaluator.ev(func.value, ctx))
    for value in values:
        if isinstance(value, Inst):
            klass = value.cls
        elif isinstance(value, SelfV) and not value.is_super and isinstance(ctx.runtime, ClsV):
            klass = ctx.runtime
        else:
            return True
        if any(isinstance(c, ClsV) and c.node is cls.node for c in evaluator.mro(klass)):
            return True
    return not values


def direct_callers(
    facts: ProjectFacts,
    file: FileFacts,
    function: ast.AST,
    holds: Holds = None,
    keep: Keep | None = None,
    runtime: ClsV | None = None,
) -> Iterator[tuple[ast.Call, Body, FileFacts, Ctx]]:
    """The project calls of `function` (any module, a bound method through its instances) and
    the function or module that makes each (those `keep` keeps; with `runtime`, those whose
    receiver may be an instance of it: caller_readings)."""
    evaluator = facts.evaluator
    summary = evaluator.summary(file.path)
    body = getattr(function, "body", None)
    if summary is None or summary.tree is not file.tree or not body:
        return
    ctx = evaluator.ctx_of(summary, body[0])
    if keep is None:
        found = evaluator.callers(function, ctx)
    else:
        found = evaluator.callers_kept(function, ctx, keep)
    instances = instance_calls(facts, summary, function, holds)
    for call, caller in [*found, *(c for c in instances if keep is None or keep(*c))]:
        where = facts.file(caller.summary.path)
        reading = caller.func if caller.func is not None else caller.summary.tree
        if where is None or where.tree is not caller.summary.tree:
            continue
        if runtime is not None and not may_be_instance(facts, call, caller, runtime):
            continue
        if isinstance(reading, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield call, reading, where, caller


def instance_calls(
    facts: ProjectFacts, summary: Summary, function: ast.AST, holds: Holds = None
) -> list[tuple[ast.Call, Ctx]]:
    """The calls of instances of the class whose `__call__` `function` is (`clip(params)` with
    `clip = GradClipper(0.5)`), in the files that write the class's name (where an instance is
    made or its class imported): by the value of each call's callee (of a call `holds` says
    may hold an instance: analysis/reach.py)."""
    owner = summary.parent(function)
    if getattr(function, "name", None) != "__call__" or not isinstance(owner, ast.ClassDef):
        return []
    evaluator = facts.evaluator
    found: list[tuple[ast.Call, Ctx]] = []
    for path in evaluator.files_naming(owner.name.encode("utf-8")):
        other = evaluator.summary(path)
        if other is None:
            continue
        for call in other.walked_calls():
            if not isinstance(call.func, (ast.Name, ast.Attribute)):
                continue
            if isinstance(call.func, ast.Name) and call.func.id == owner.name:
                continue  # the class itself: an instantiation
            if holds is not None and not holds(other, call):
                continue
            ctx = evaluator.ctx_of(other, call)
            values = evaluator.force(evaluator.ev(call.func, ctx))
            if any(
                isinstance(v, Inst) and (fn := dunder_call(facts, v.cls)) and fn.node is function
                for v in values
            ):
                found.append((call, ctx))
    return found


class Step(Protocol):
    """What shared_level reads of an order.Event."""

    @property
    def statement(self) -> ast.stmt: ...
    @property
    def via(self) -> tuple[ast.Call, ...]: ...
    @property
    def inner(self) -> Step | None: ...


def shared_level(first: Step, second: Step) -> tuple[Step, Step] | None:
    """Two events (order.Event) reached through the same helper call, as the deepest helper
    that runs both reads them: where their statements differ. None when they never do."""
    a, b = first, second
    while a.statement is b.statement and a.via and b.via and a.via[0] is b.via[0]:
        if a.inner is None or b.inner is None:
            return None
        a, b = a.inner, b.inner
    return None if a.statement is b.statement else (a, b)


def free_code(
    facts: ProjectFacts, file: FileFacts, reading: ast.AST, through: tuple[ast.Call, ...], code: str
) -> str | None:
    """`code`, written in `reading`, as it can be written inside the functions the calls
    `through` enter one after the other: only closures (each defined inside the one before)
    that bind none of its names see it as it is."""
    try:
        names = {
            n.id for n in ast.walk(ast.parse(code.strip(), mode="eval")) if isinstance(n, ast.Name)
        }
    except SyntaxError:
        return None
    where, current = file, reading
    for call in through:
        fns = callees(facts, where, call)
        if len(fns) != 1 or not nested_in(facts, fns[0], current):
            return None
        fn = fns[0]
        own = set(facts.evaluator.local_bindings(fn.node)) | {
            p.arg for p in all_params(fn.node.args)
        }
        if names & own:
            return None
        where, current = facts.files.get(fn.summary.path) or where, fn.node
    return code


def bound_receivers(
    facts: ProjectFacts, file: FileFacts, func: ast.expr, attr: str
) -> list[tuple[Summary, ast.expr]]:
    """The objects whose library method `attr` a callee not written `<x>.<attr>` may be bound
    to (`self.manual_backward` handed to a helper that calls `self.backward_fn(loss)`), each
    with the module its receiver is written in: the method's value is the expression that
    named it, as the evaluator follows it."""
    found: list[tuple[Summary, ast.expr]] = []
    for value in facts.values(file, func):
        if (
            isinstance(value, Opaque)
            and isinstance(value.node, ast.Attribute)
            and value.node.attr == attr
            and value.summary is not None
        ):
            found.append((value.summary, value.node.value))
    return found


def step_closure(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> list[Fn]:
    """The project functions an optimizer's `step(closure)` is given (`closure=` or its one
    positional argument): torch's and Lightning's optimizers call it before they step."""
    given = [k.value for k in call.keywords if k.arg == "closure"] or call.args[:1]
    return [v for node in given for v in facts.values(file, node) if isinstance(v, Fn)]


def calls_instance(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> bool:
    """The call may run a project object's `__call__` (whose callers `evaluator.callers` does
    not list: they are calls of the instance, not of the name)."""
    return any(
        isinstance(v, Inst) and dunder_call(facts, v.cls) is not None
        for v in facts.values(file, call.func)
    )
