"""Where the calls of a function nested in another can be: a function whose name is only ever
called cannot be called outside the function it is defined in.

The evaluator makes the value of a nested `def closure(...)` of a function `outer` (an `Fn` of
it) only by reading the name `closure` where `outer`'s own names are seen: `outer`'s code,
the functions and lambdas inside it, and its decorators and defaults (which the evaluator
reads with `outer`'s names, as `Summary.enclosing` places them). No code elsewhere sees that
name; it can only be handed a value of it. So when every use of the name inside `outer` is
the callee of a call (`closure(opt)`), never a value read (returned, passed, stored, yielded,
decorated, put in a partial, an f-string or a default), with no `global` / `nonlocal` of it
and nothing else bound to it there, no value of the function leaves `outer`, and a call of
that name written elsewhere in the module (`closure()` in an optimizer's `step(self,
closure)`) cannot call it: its callee, whatever the evaluator finds it to be, is never this
function. callers.py then reads only the calls whose innermost function is `outer` or one
inside it, where it read every call of the name in the module and evaluated each callee
(through that callee's own callers: the Lightning tree followed an optimizer's `step` to
the `optimizer_step` of every test module's model for one `opt.zero_grad()`).

A function defined in a class body (a method, a staticmethod: reached as an attribute) or at a
module's top level is never narrowed, and neither is a decorated one (its decorator gets the
value), nor any name spelled other than in ASCII (the parser normalises NFKC spellings, so an
identifier is compared as the parser gives it, a string as written).
"""

from __future__ import annotations

import ast
import weakref

from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.nodes import child_nodes
from amp_clipfix.analysis.summary import Summary

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Statements a `def` may sit in without leaving its function's own names.
BLOCKS = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.ExceptHandler,
    ast.Match,
    ast.match_case,
)

# A nested function -> the ids of the functions and lambdas its calls can be in (None: any
# call of its name anywhere in the module). Weak keys: the answers go with their tree.
_SCOPES: weakref.WeakKeyDictionary[ast.AST, frozenset[int] | None] = weakref.WeakKeyDictionary()


def calling_scopes(summary: Summary, function: ast.AST) -> frozenset[int] | None:
    """The ids of the functions and lambdas whose own code may call `function`, a function
    nested in another and only ever called there (see the module's docstring); None when a
    call anywhere in the module may."""
    if function in _SCOPES:
        return _SCOPES[function]
    found = _calling_scopes(summary, function)
    _SCOPES[function] = found
    return found


def _calling_scopes(summary: Summary, function: ast.AST) -> frozenset[int] | None:
    if not isinstance(function, FUNCTIONS) or function.decorator_list:
        return None
    name = function.name
    if not name.isascii():
        return None
    outer = summary.parent(function)
    while isinstance(outer, BLOCKS):
        outer = summary.parent(outer)
    if not isinstance(outer, FUNCTIONS):
        return None  # a method, a class's function, a module's: reached from elsewhere
    return only_called(outer, function, name)


def only_called(outer: ast.AST, function: ast.AST, name: str) -> frozenset[int] | None:
    """The ids of `outer` and the functions and lambdas inside it when `name` is used there
    only as the callee of calls and bound only by `function`'s `def`; else None."""
    scopes = {id(outer)}
    callees: set[int] = set()
    todo: list[ast.AST] = [outer]
    for node in todo:  # grows as it goes
        kind = type(node)
        if kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Name and func.id == name:
                callees.add(id(func))
        elif kind is ast.Name:
            if node.id == name and id(node) not in callees:  # type: ignore[attr-defined]
                return None  # read as a value, stored or deleted
            continue
        elif kind is ast.Constant:
            if node.value == name:  # type: ignore[attr-defined]
                return None  # a string of the name (`locals()["closure"]`): not followed
            continue
        elif isinstance(node, SCOPES):
            scopes.add(id(node))
            if node is not function and getattr(node, "name", None) == name:
                return None  # another `def` of the name
        elif isinstance(node, (ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            if getattr(node, "name", None) == name:
                return None
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            if name in node.names:
                return None
        elif kind is ast.arg:
            if node.arg == name:  # type: ignore[attr-defined]
                return None
        elif kind is ast.alias:
            if (node.asname or node.name.split(".", 1)[0]) == name:  # type: ignore[attr-defined]
                return None
        elif isinstance(node, ast.MatchMapping) and node.rest == name:
            return None
        todo.extend(child_nodes(node))
    return frozenset(scopes)


def seen_in(scope: frozenset[int] | None, caller: Ctx) -> bool:
    """Whether a call in `caller` may call the function `scope` is of (calling_scopes)."""
    return scope is None or id(caller.func) in scope
