"""Descriptors: a method decorated with `@property` or `@functools.cached_property` is read as
an attribute, and the read runs the method.

`self.optim_kwargs` where the class defines `@property def optim_kwargs(self): return {...}`
holds what the method returns (a dict spread into the optimizer, a constructor argument kept
on `self`, a config value), evaluated with `self` the instance of the class that defines it; a
return the evaluator cannot follow stays decided at run time (`Opaque`). `automatic_optimization`
written as a property returning `False` is then manual optimization by the same rule
(facts.manual_optimization reads the class attribute). The decorator is known by its value,
through any import or alias (`names.DESCRIPTORS`), never by its name.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING

from amp_clipfix.analysis import names
from amp_clipfix.analysis.dispatch import runtime_ctx
from amp_clipfix.analysis.values import ClsV, Opaque

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import EvaluatorBase
    from amp_clipfix.analysis.summary import Summary


def is_descriptor(
    ev: EvaluatorBase, method: ast.FunctionDef | ast.AsyncFunctionDef, klass: ClsV
) -> bool:
    """The method is decorated with a descriptor that calls it on each read (or once): a
    decorator whose qualified name, through the module's imports, is one (`property`,
    `cached_property` imported under any name, `functools.cached_property`). Read from the
    imports, never by evaluating the decorator: a class's other decorators (`@master_only`,
    `@torch.no_grad()`) would load the modules that define them."""
    return any(
        written_name(klass.summary, decorator) in names.DESCRIPTORS
        for decorator in method.decorator_list
    )


def written_name(summary: Summary, node: ast.expr) -> str | None:
    """The qualified name a decorator's name or attribute chain is imported as (a builtin when
    the module neither imports nor binds it); None for a call or a project binding."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    root = summary.imports.get(node.id)
    if root is None:
        if node.id in summary.top:
            return None  # bound in the module: a project object
        root = f"{builtins.__name__}.{node.id}"  # as libcst names it (scopes.py)
    return ".".join([root, *reversed(parts)])


def descriptor_values(
    ev: EvaluatorBase,
    method: ast.FunctionDef | ast.AsyncFunctionDef,
    klass: ClsV,
    runtime: ClsV | None,
) -> list[object]:
    """What reading the attribute gives: every value the method returns, with `self` an
    instance of `klass` (of `runtime`, a subclass, when it is set: dispatch.py); decided at
    run time when it returns nothing the code shows."""
    if runtime is None:
        ctx = ev.ctx(klass.summary, method, klass.node)
    else:
        ctx = runtime_ctx(ev, klass.summary, method, klass.node, runtime)
    values = [
        value
        for node in ev.body(method)
        if isinstance(node, ast.Return) and node.value is not None
        for value in ev.ev(node.value, ctx)
    ]
    return values or [Opaque(method, klass.summary)]
