"""Comprehensions over a sequence the code shows, as values: `{f.name: getattr(cfg, f.name) for
f in fields(cfg) if f.name not in skip}` is a dict of the record's fields, `[make(x) for x in xs]`
(also a generator given to `list(...)`) a list of what each element makes.

The loop's variable takes each element in turn (a copy of the expression with the element in
its place, frame.Given); a test the code decides (sequences.test_truth) keeps or leaves out the
element, one it does not decide makes it an element (or a key) held on some paths only.
"""

from __future__ import annotations

import ast
import copy

from amp_clipfix.analysis.frame import Ctx, Given, add_unique
from amp_clipfix.analysis.sequences import Sequences, SeqV
from amp_clipfix.analysis.values import Absent, DictV, Lit, Opaque, TupleV

# Elements past which a comprehension over them is not followed.
MAX_ELEMENTS = 64


class Comprehensions(Sequences):
    """Dict and list comprehensions with one loop over a sequence the code shows."""

    def comprehended(
        self, node: ast.DictComp | ast.ListComp | ast.GeneratorExp, ctx: Ctx
    ) -> tuple[str, list[tuple[object, bool]], bool] | None:
        """A comprehension's one loop over a sequence the code shows: its variable, the
        elements its tests do not leave out (each with whether it is taken on every path),
        and whether the sequence holds only those; None for anything else (several loops, an
        unpacking target, a sequence not known here, too many elements)."""
        generators = node.generators
        if len(generators) != 1 or generators[0].is_async:
            return None
        loop = generators[0]
        iterated = self.ev(loop.iter, ctx)
        if not isinstance(loop.target, ast.Name) or not iterated:
            return None
        if not all(isinstance(v, (TupleV, SeqV)) for v in iterated):
            return None
        elements = list(self.sequence_elements(iterated))
        if len(elements) > MAX_ELEMENTS:
            return None
        name = loop.target.id
        taken: list[tuple[object, bool]] = []
        for element, surely in elements:
            tests = {
                answer
                for test in loop.ifs
                for answer in self.test_truth(given(test, name, element, self.keep), ctx)
            }
            if tests and False in tests and len(tests) == 1:
                continue
            taken.append((element, surely and not tests - {True}))
        return name, taken, self.sequence_parts(iterated)[2]

    def ev_dict_comprehension(self, node: ast.DictComp, ctx: Ctx) -> list[object]:
        """`{key: value for name in xs if test}` (the fields of a record: `{f.name:
        getattr(cfg, f.name) for f in fields(cfg)}`): an entry per element whose key is a
        literal; one a test the code does not decide may leave out (`Absent`). Anything else
        (a key decided at run time, a loop not followed) makes a dict that may hold keys the
        code does not show."""
        followed = self.comprehended(node, ctx)
        if followed is None:
            return [DictV(closed=False)]
        name, taken, closed = followed
        result = DictV(closed=closed)
        for element, surely in taken:
            keys = self.ev(given(node.key, name, element, self.keep), ctx)
            if not keys or not all(
                isinstance(key, Lit) and isinstance(key.value, str) for key in keys
            ):
                result.closed = False
                continue
            values = self.ev(given(node.value, name, element, self.keep), ctx)
            for key in keys:
                entry = result.entries.setdefault(key.value, [])  # type: ignore[attr-defined]
                add_unique(entry, values)
                if not surely:
                    entry.append(Absent(node, ctx.summary))
        return [result]

    def ev_list_comprehension(
        self, node: ast.ListComp | ast.GeneratorExp, ctx: Ctx
    ) -> list[object]:
        """`[make(x) for x in xs if test]` (also a generator given to `list(...)`): a `SeqV`
        of what each element makes, maybe where a test the code does not decide may leave
        it out."""
        followed = self.comprehended(node, ctx)
        if followed is None:
            return [Opaque(node, ctx.summary)]
        name, taken, closed = followed
        sure: list[object] = []
        maybe: list[object] = []
        for element, surely in taken:
            add_unique(
                sure if surely else maybe, self.ev(given(node.elt, name, element, self.keep), ctx)
            )
        return [SeqV(sure, maybe, closed)]


class Substitute(ast.NodeTransformer):
    """A copy of an expression with a comprehension's variable as the value it takes."""

    def __init__(self, name: str, value: object) -> None:
        self.name = name
        self.value = value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return Given([self.value], node)
        return node


def given(expression: ast.expr, name: str, value: object, keep: list[object]) -> ast.AST:
    """`expression` with `name` holding `value` (kept alive as long as the memo is)."""
    copied = Substitute(name, value).visit(copy.deepcopy(expression))
    keep.append(copied)
    return copied
