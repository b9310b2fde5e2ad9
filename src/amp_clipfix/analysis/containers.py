"""The evaluator's container parts in one base (issue 37): lists and tuples (sequences.py,
comprehensions.py), dataclass and NamedTuple records (dataclass_calls.py), SimpleNamespace
objects (namespaces.py). Each hands what it does not model to the next base of the evaluator."""

from __future__ import annotations

import ast

from amp_clipfix.analysis.comprehensions import Comprehensions
from amp_clipfix.analysis.dataclass_calls import DataclassCalls, RecordMethod
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.namespaces import Namespaces

__all__ = ["CONTAINER_NODES", "Containers", "RecordMethod"]

# Expressions that may build a container: `[*a, b]`, `a + b`, `a | b`, comprehensions.
CONTAINER_NODES = (ast.List, ast.Tuple, ast.BinOp, ast.DictComp, ast.ListComp, ast.GeneratorExp)


class Containers(Comprehensions, DataclassCalls, Namespaces):
    """Lists, tuples, records and namespaces as values."""

    def ev_container(self, node: ast.AST, ctx: Ctx) -> list[object] | None:
        """The values of a container expression; None for a plain list or tuple display
        (the evaluator's own TupleV)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(element, ast.Starred) for element in node.elts):
                return self.ev_display(node, ctx)
            return None
        if isinstance(node, ast.BinOp):
            return self.ev_binop(node, ctx)
        if isinstance(node, ast.DictComp):
            return self.ev_dict_comprehension(node, ctx)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.ev_list_comprehension(node, ctx)
        return None
