"""Small readers of libcst call and literal nodes, shared by the collector and the codemods."""

from __future__ import annotations

import ast

import libcst as cst


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
