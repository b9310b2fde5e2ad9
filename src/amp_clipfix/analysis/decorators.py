"""Decorated functions: a decorator of the project whose wrapper calls the wrapped function.

`@manual_step(clip=1.0)` on a LightningModule's `training_step`, with

    def manual_step(clip):
        def decorate(fn):
            @functools.wraps(fn)
            def wrapper(self, batch, batch_idx):
                loss = fn(self, batch, batch_idx)
                self.manual_backward(loss)
                ...

            return wrapper

        return decorate

runs `wrapper` in place of the method: Lightning calls `module.training_step(batch, i)`, so
the wrapper's first parameter is the module (`wrapper_self`), and `fn` inside it is the
method as written (`wrapped_functions`), called with the wrapper's arguments. The decorator is
known by its value (`@name`, `@module.name`, `@factory(...)` whose call returns it, in the same
module or imported from another), never by its name; `functools.wraps` only copies names and
changes nothing here. A decorator whose wrappers never call (nor mention) the wrapped
function replaces it: the method's body never runs (`replaced`). Library decorators
(`torch.no_grad`, `staticmethod`) are not project functions and leave the method as written.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.decoration_texts import may_decorate_with
from amp_clipfix.analysis.recording import raw, tested
from amp_clipfix.analysis.values import ClsV, Fn, SelfV

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import Ctx, EvaluatorBase
    from amp_clipfix.analysis.summary import Summary

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef
# A function a decorator is applied to: the function, its module, the class it is a method of.
Applied = tuple[Function, "Summary", ast.ClassDef | None]


def first_positional(function: ast.AST) -> str | None:
    args = getattr(function, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    positional = [*args.posonlyargs, *args.args]
    return positional[0].arg if positional else None


def returned_functions(ev: EvaluatorBase, summary: Summary, function: Function) -> list[Function]:
    """The functions defined inside `function` that it returns by name (`return wrapper`),
    found once per function (every parameter of a plain function asks)."""
    key = id(function)
    if key not in ev.returned:
        ev.returned[key] = find_returned(ev, function)
    return ev.returned[key]


def find_returned(ev: EvaluatorBase, function: Function) -> list[Function]:
    names = {
        node.value.id
        for node in ev.statements(function)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)
    }
    if not names:
        return []  # returns no name: no function of its own (most functions: no walk)
    inner = {
        s.name: s
        for s in ast.walk(function)
        if isinstance(s, FUNCTIONS) and s is not function and s.name in names
    }
    return [inner[name] for name in sorted(names) if name in inner]


def decorator_of(ev: EvaluatorBase, summary: Summary, wrapper: ast.AST) -> Function | None:
    """The function that returns `wrapper` (defined in it) as its result: a decorator."""
    outer, _ = summary.enclosing(wrapper)
    if not isinstance(outer, FUNCTIONS):
        return None
    return outer if wrapper in returned_functions(ev, summary, outer) else None


def names_applying(ev: EvaluatorBase, summary: Summary, decorator: Function) -> set[str]:
    """The names an application can write: the decorator's, or a factory's that returns it."""
    found = {decorator.name}
    factory = decorator_of(ev, summary, decorator)
    if factory is not None:
        found.add(factory.name)
    return found


def applications(ev: EvaluatorBase, summary: Summary, decorator: Function) -> list[Applied]:
    """The functions of the project `decorator` is applied to (`@decorator`, `@factory(...)`),
    found in the files that write one of their names, by the value of each decoration."""
    key = id(decorator)
    if key in ev.decorations:
        return ev.decorations[key]
    ev.decorations[key] = []  # a decoration read while its own applications are looked for
    found: list[Applied] = []
    wanted = names_applying(ev, summary, decorator)
    words = sorted(name.encode("utf-8") for name in wanted)
    paths = {p for word in words for p in ev.files_naming(word)}
    for path in sorted(paths):
        if not may_decorate(ev, path, words):
            continue  # no decoration of the file writes one of the names (decoration_texts.py)
        other = ev.summary(path)
        if other is None:
            continue
        for statement in other.walked_statements():
            if not isinstance(statement, FUNCTIONS) or not statement.decorator_list:
                continue
            for decoration in statement.decorator_list:
                if not wanted & written_names(decoration):
                    continue
                values = ev.ev(decoration, ev.ctx_of(other, decoration))
                if any(isinstance(v, Fn) and v.node is decorator for v in values):
                    parent = other.parent(statement)
                    cls = parent if isinstance(parent, ast.ClassDef) else None
                    found.append((statement, other, cls))
    ev.decorations[key] = found
    return found


def written_names(decoration: ast.expr) -> set[str]:
    """The names a decoration writes: its names and the attributes it reads (`@thunder.jit`)."""
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(decoration)
        if isinstance(n, (ast.Name, ast.Attribute))
    }


def may_decorate(ev: EvaluatorBase, path: Path, words: list[bytes]) -> bool:
    """Whether the file's text may write one of `words` in a decoration, noted as that test of
    its text (a later run asks it again of a changed file), not as a read of it."""
    found = may_decorate_with(path, raw(ev.contents)[path], *words)
    return tested(ev.contents, path, (("raw", "may_decorate_with", *words),), found)


def wrapper_self(ev: EvaluatorBase, function: ast.AST, name: str, ctx: Ctx) -> list[object] | None:
    """The first parameter of a wrapper that replaces methods: the instances of their classes
    (None when `function` is no such wrapper or `name` not that parameter)."""
    if not isinstance(function, FUNCTIONS) or first_positional(function) != name:
        return None
    decorator = decorator_of(ev, ctx.summary, function)
    if decorator is None:
        return None
    methods: list[object] = [
        SelfV(ClsV(cls, where)) for _, where, cls in applications(ev, ctx.summary, decorator) if cls
    ]
    return methods or None


def wrapped_functions(
    ev: EvaluatorBase, function: ast.AST, name: str, ctx: Ctx
) -> list[object] | None:
    """The first parameter of a decorator: the functions it is applied to, as written (a
    method unbound: the wrapper passes `self` itself). None when there is no application."""
    if not isinstance(function, FUNCTIONS) or first_positional(function) != name:
        return None
    if not returned_functions(ev, ctx.summary, function):
        return None  # returns no function of its own: no decorator of this kind
    applied = applications(ev, ctx.summary, function)
    return [Fn(node, where, cls) for node, where, cls in applied] or None


def replaced(ev: EvaluatorBase, summary: Summary, function: Function) -> bool:
    """A decorator of the project replaces the function with wrappers that never call it (nor
    mention it): its body never runs when the decorated name is called. Every value the
    decoration may be must do so, and every `return` of the decorator must give one of its
    wrappers (`return fn if DEBUG else wrapper` keeps the body)."""
    ctx = ev.ctx_of(summary, function)
    for decoration in function.decorator_list:
        values = ev.ev(decoration, ctx)
        if values and all(replaces(ev, value, function) for value in values):
            return True
    return False


def replaces(ev: EvaluatorBase, value: object, function: Function) -> bool:
    if not isinstance(value, Fn) or value.node is function:
        return False
    param = first_positional(value.node)
    wrappers = returned_functions(ev, value.summary, value.node)
    returns = [node for node in ev.statements(value.node) if isinstance(node, ast.Return)]
    if param is None or not wrappers or len(returns) != len(wrappers):
        return False  # a return gives something else (the function itself, None)
    return not any(
        isinstance(n, ast.Name) and n.id == param
        for wrapper in wrappers
        for statement in wrapper.body
        for n in ast.walk(statement)
    )


def method_wrappers(
    ev: EvaluatorBase, summary: Summary, keep: Callable[[Function], bool] | None = None
) -> list[tuple[Function, list[ClsV]]]:
    """The wrappers the module's decorators return, with the classes whose methods they
    replace (a wrapper applied to plain functions only is left out); `keep`: of the
    functions it keeps only (None: every function)."""
    found: list[tuple[Function, list[ClsV]]] = []
    for statement in summary.walked_statements_with(b"def", own=1):  # its own `def`
        if not isinstance(statement, FUNCTIONS) or keep is not None and not keep(statement):
            continue
        decorator = decorator_of(ev, summary, statement)
        if decorator is None:
            continue
        applied = applications(ev, summary, decorator)
        classes = [ClsV(cls, where) for _, where, cls in applied if cls is not None]
        if classes:
            found.append((statement, classes))
    return found
