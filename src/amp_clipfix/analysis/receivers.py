"""Where an attribute call's receiver comes from, for reach.CallReach's choice of the calls it
answers from its index of names instead of asking the evaluator what the callee is: a receiver
whose value the evaluator follows into other code (a call's result, a parameter's callers, a
local a call gave) can cost it a project's worth of questions; the others are cheap for it."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import Summary

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import EvaluatorBase

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def root_of(expr: ast.expr) -> ast.expr:
    """What an expression's attributes and items are read from (`a` in `a.b[0].c`)."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr


def follows_callers(summary: Summary, receiver: ast.expr, function: ast.AST | None = None) -> bool:
    """The receiver's value is looked for in other functions' code: it is (an attribute or
    item of) a call's result, or a parameter of the function it is in other than a method's
    `self` / `cls` (its callers' arguments). Only such calls are worth an index question: the
    others are cheap for the evaluator, and asking would cost more than it saves. `function`:
    the one the receiver is read in, when known (a module: no parameters)."""
    receiver = root_of(receiver)
    if isinstance(receiver, ast.Call):
        return True
    if not isinstance(receiver, ast.Name):
        return False
    if function is None:
        function, cls = summary.enclosing(receiver)
    else:
        cls = summary.enclosing(function)[1] if isinstance(function, FUNCTION_NODES) else None
    if not isinstance(function, (*FUNCTION_NODES, ast.Lambda)):
        return False
    args: ast.arguments = function.args
    positional = [*args.posonlyargs, *args.args]
    if cls is not None and positional and positional[0].arg == receiver.id:
        return False  # `self.x.name(...)`: the class's own attribute
    return receiver.id in {a.arg for a in all_params(args)}


def from_call(
    evaluator: EvaluatorBase, summary: Summary, receiver: ast.expr, function: ast.AST | None
) -> bool:
    """The receiver is (an attribute or item of) a local of the function that an assignment
    gives a call's result (or an attribute or item of one): its value is followed into the
    code the call runs."""
    receiver = root_of(receiver)
    if not isinstance(receiver, ast.Name) or not isinstance(function, FUNCTION_NODES):
        return False
    for node in evaluator.local_bindings(function, summary).get(receiver.id, ()):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is not None and isinstance(root_of(value), ast.Call):
            return True
    return False
