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
        for node in ev.statements(method)
        if isinstance(node, ast.Return) and node.value is not None
        for value in ev.ev(node.value, ctx)
    ]
    return values or [Opaque(method, klass.summary)]


ACCESSORS = frozenset({"setter", "getter", "deleter"})
PROPERTY = f"{builtins.__name__}.property"
# Class-body statements whose bindings are their targets' names (an import, a loop, a `with`,
# a `match` are not followed: the answer is no).
SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass, ast.Delete)


def property_accessor(summary: Summary, cls: ast.ClassDef, function: ast.AST) -> bool:
    """`function` is a method written `@name.setter` (or `.getter`, `.deleter`), its one
    decorator, where `name` is, at that point of the class body, a method decorated with the
    builtin `property` (or an accessor of one, in turn): Python binds the method's name to a
    new property, so no call by that name runs it (an assignment, a read or a `del` of the
    attribute does) and no call of the project can be its caller. A binding of the name of
    any other kind on the way (an assignment, a loop, a method of another decorator), or of
    `property` itself in the class, and the answer is no."""
    decorators: list[ast.expr] = getattr(function, "decorator_list", [])
    if len(decorators) != 1:
        return False
    decorator = decorators[0]
    if not (
        isinstance(decorator, ast.Attribute)
        and decorator.attr in ACCESSORS
        and isinstance(decorator.value, ast.Name)
    ):
        return False
    wanted = decorator.value.id
    properties: set[str] = set()  # the names bound to a builtin property so far
    for statement in cls.body:
        if statement is function:
            return wanted in properties
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if is_property(summary, statement, properties):  # what it reads is above it
                properties.add(statement.name)
            else:
                properties.discard(statement.name)
            continue
        if isinstance(statement, ast.ClassDef):  # binds its name (its body, its own scope)
            properties.discard(statement.name)
            if statement.name == "property":
                return False
            continue
        bound = {
            node.id
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
        }
        if "property" in bound or not isinstance(statement, SIMPLE):
            return False  # `property` rebound, or a statement that may bind anything
        properties -= bound
    return False


def is_property(
    summary: Summary, method: ast.FunctionDef | ast.AsyncFunctionDef, properties: set[str]
) -> bool:
    """Decorated with the builtin `property` alone, or an accessor of a property bound above."""
    if len(method.decorator_list) != 1:
        return False
    decorator = method.decorator_list[0]
    if isinstance(decorator, ast.Attribute) and decorator.attr in ACCESSORS:
        return isinstance(decorator.value, ast.Name) and decorator.value.id in properties
    return written_name(summary, decorator) == PROPERTY
