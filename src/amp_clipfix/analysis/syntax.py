"""Small readers of libcst call and literal nodes, shared by the collector and the codemods."""

from __future__ import annotations

import ast

import libcst as cst

from amp_clipfix.analysis import names

# What the guard passes for a LightningModule: the Trainer's precision plugin.
MODULE_PRECISION = "self.trainer.precision_plugin"


def literal_value(node: cst.BaseExpression) -> str | None:
    """The value of a simple literal as Lightning would compare it (`16` -> "16"), else None."""
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.Name)):
        if isinstance(node, cst.Name) and node.value not in ("True", "False", "None"):
            return None
        try:
            return str(ast.literal_eval(node.value))
        except (ValueError, SyntaxError):
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        return None if inner is None else f"-{inner}"
    return None


def keyword_arg(call: cst.Call, keyword: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def positional_or_keyword(call: cst.Call, index: int, keyword: str) -> cst.Arg | None:
    found = keyword_arg(call, keyword)
    if found is not None:
        return found
    positional = [arg for arg in call.args if arg.keyword is None and arg.star == ""]
    return positional[index] if index < len(positional) else None


def star_kwargs(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.star == "**"]


def clip_call_of(statement: cst.BaseSmallStatement) -> cst.Call | None:
    """The clip call a guardable statement makes: `x.clip_gradients(...)` alone or assigned."""
    value = getattr(statement, "value", None)
    if isinstance(statement, (cst.Expr, cst.Assign, cst.AnnAssign)) and isinstance(value, cst.Call):
        return value
    return None


def guard_test(call: cst.Call) -> cst.Call | None:
    """`can_clip_gradients(<fabric or self.trainer.precision_plugin>, <optimizer>)`.

    None when the optimizer argument is missing or is an expression that should not be
    evaluated twice.
    """
    receiver = call.func.value  # type: ignore[attr-defined]
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        owner, optimizer = (
            cst.parse_expression(MODULE_PRECISION),
            positional_or_keyword(call, 0, "optimizer"),
        )
    else:
        owner, optimizer = receiver, positional_or_keyword(call, 1, "optimizer")
    if optimizer is None or not isinstance(
        optimizer.value, (cst.Name, cst.Attribute, cst.Subscript)
    ):
        return None
    return cst.Call(
        func=cst.Name(names.GUARD_HELPER),
        args=[
            cst.Arg(owner, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(optimizer.value),
        ],
    )
