"""A function's own names, asked at every name the evaluator reads, in every function around
it: its parameters, what its body binds and declares `global`, and its statements.

Only a statement (or a `with` item) binds a name, except an assignment expression (`:=`), so a
function's own statements (`own_statements`, about a tenth of its nodes) answer these questions
whenever its module's text writes no `:=`: the same bindings in the same order as a walk of all
its nodes (`body`), which the evaluator then makes only for the questions that read expressions.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.frame import EvaluatorBase
from amp_clipfix.analysis.shapes import (
    all_params,
    bound_names,
    declared_global,
    function_body_nodes,
    own_statements,
)
from amp_clipfix.analysis.summary import Summary, TextLines

WALRUS = b":="


class OwnNames(EvaluatorBase):
    """A function's parameters, own nodes, own statements and own bindings, once per function."""

    def body(self, function: ast.AST) -> list[ast.AST]:
        """The nodes of a function's own body, walked once per run: the returns of a function
        are read at each of its calls (a framework's helpers are called thousands of times)."""
        key = id(function)
        if key not in self.body_cache:
            self.body_cache[key] = list(function_body_nodes(function))
        return self.body_cache[key]

    def statements(self, function: ast.AST) -> list[ast.AST]:
        """The statements (and `with` items) of `body`, in its order, walked without the
        expressions (shapes.own_statements)."""
        key = id(function)
        found = self.statements_cache.get(key)
        if found is None:
            found = self.statements_cache[key] = own_statements(function)
        return found

    def param_names(self, function: ast.AST) -> frozenset[str]:
        """The names of a function's parameters (a lambda's too)."""
        key = id(function)
        found = self.params_cache.get(key)
        if found is None:
            args: ast.arguments = function.args  # type: ignore[attr-defined]
            found = self.params_cache[key] = frozenset(p.arg for p in all_params(args))
        return found

    def globals_declared(self, function: ast.AST) -> frozenset[str]:
        """The names a function's own body declares `global` (a `global` is a statement)."""
        key = id(function)
        if key not in self.globals_cache:
            self.globals_cache[key] = declared_global(self.statements(function))
        return self.globals_cache[key]

    def local_bindings(
        self, function: ast.AST, summary: Summary | None = None
    ) -> dict[str, list[ast.AST]]:
        """The function's own bindings by name; a name it declares `global` is not its own.
        `summary`: the function's module, when known: a module whose text writes no `:=` has
        no binding outside a statement, so only the statements are read."""
        key = id(function)
        if key not in self.locals_cache:
            found: dict[str, list[ast.AST]] = {}
            declared = self.globals_declared(function)
            written = summary is None or self.writes_walrus(summary)
            for node in self.body(function) if written else self.statements(function):
                for name in bound_names(node):
                    if name not in declared:
                        found.setdefault(name, []).append(node)
            self.locals_cache[key] = found
        return self.locals_cache[key]

    def writes_walrus(self, summary: Summary) -> bool:
        """Whether the module's text (the one its tree was parsed from) may write `:=`."""
        key = id(summary)
        known = self.walrus_cache.get(key)
        if known is None:
            lines = summary.lines
            known = not isinstance(lines, TextLines) or WALRUS in lines.data
            self.walrus_cache[key] = known
        return known
