"""The library model of the evaluator: what calls of torch, Lightning and the standard library
return.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis import names
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk, add_unique
from amp_clipfix.analysis.fused_keys import may_hold_fused, noted_again
from amp_clipfix.analysis.names import Kind
from amp_clipfix.analysis.shapes import literal_of, super_init_call
from amp_clipfix.analysis.values import (
    ClsV,
    DictV,
    Ext,
    FabricV,
    Opaque,
    Opt,
    Part,
    SchedulerV,
    TrainerV,
)
from amp_clipfix.models import EntryId

OPTIMIZERS = (Kind.OPTIMIZER, Kind.ANY_OPTIMIZER)
PICKED_FROM = (Kind.OPTIMIZER_MODULE, Kind.ANY_OPTIMIZER)  # `getattr(torch.optim, name)`
# Names other modules imported from here before the registry held them.
BUILTINS = names.BUILTINS
CALLBACK_CLASSES = names.CALLBACK_CLASSES


class LibraryModel(EvaluatorBase):
    """Calls of library code: torch's optimizers, `functools.partial`, `dict(...)`, `getattr`,
    Lightning's Trainer and Fabric."""

    def unknown_callee(self, call: ast.Call, ctx: Ctx) -> list[object]:
        """Only torch's fusable optimizers take `fused`: a call that cannot be followed and
        passes `fused` builds a (possibly fused) optimizer."""
        fused = self.fused_of(call, ctx)
        if fused:
            return [Opt(call, ctx.summary, fused)]
        return [Opaque(call, ctx.summary)]

    def call_external(self, qname: str, call: ast.Call, ctx: Ctx) -> list[object]:
        """A call of a library object, by the kind the registry (names.py) gives it; any other
        (a kind not modelled yet, such as `hydra.utils.instantiate` or `os.environ.get`, or an
        object the registry does not hold) is decided at run time."""
        kind = names.kind_of(qname)
        if kind in OPTIMIZERS:
            return [Opt(call, ctx.summary, self.fused_of(call, ctx))]
        if kind is Kind.PARTIAL and call.args:
            return [self.call_functools_partial(call, ctx)]
        if kind is Kind.DICT:
            return [self.call_dict(call, ctx)]
        if kind is Kind.GETATTR and len(call.args) >= 2:
            return self.call_getattr(call, ctx)
        if kind is Kind.TRAINER:
            return [TrainerV(ctx.summary.entry(call), call, ctx.summary)]
        if kind is Kind.FABRIC:
            return [FabricV(ctx.summary.entry(call), call, ctx.summary)]
        if kind is Kind.LR_SCHEDULER:
            return [SchedulerV(call, ctx.summary)]
        return self.unknown_callee(call, ctx)

    def call_functools_partial(self, call: ast.Call, ctx: Ctx) -> Part:
        """`functools.partial(func, *args, **keywords)`: the positional arguments it binds, and
        the keywords, also through `**` spreads."""
        keywords: dict[str, list[object]] = {
            k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg is not None
        }
        for keyword in call.keywords:
            if keyword.arg is None:
                for value in self.ev(keyword.value, ctx):
                    if isinstance(value, DictV):
                        for key, items in value.entries.items():
                            add_unique(keywords.setdefault(key, []), items)
        bound = call.args[1:]
        args: list[list[object]] | None = [[Thunk(arg, ctx)] for arg in bound]
        if any(isinstance(arg, ast.Starred) for arg in bound):
            args = None
        return Part(self.ev(call.args[0], ctx), keywords, call, ctx.summary, args)

    def call_dict(self, call: ast.Call, ctx: Ctx) -> DictV:
        """`dict(mapping, **spread, key=value)`."""
        result = DictV({k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg})
        for keyword in call.keywords:
            if keyword.arg is None:
                self.merge_spread(result, self.ev(keyword.value, ctx))
        if call.args:
            self.merge_spread(result, self.ev(call.args[0], ctx))
        return result

    def call_getattr(self, call: ast.Call, ctx: Ctx) -> list[object]:
        name = literal_of(call.args[1])
        is_str = isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)
        values: list[object] = []
        for value in self.ev(call.args[0], ctx):
            if is_str and name is not None:
                values.extend(self.attribute_of(value, name, call))
            elif isinstance(value, Ext) and names.kind_of(value.qname) in PICKED_FROM:
                values.append(Ext(names.UNKNOWN_OPTIMIZER))
            else:
                values.append(Opaque(call, ctx.summary))
        return values

    def call_partial(self, part: Part, call: ast.Call, ctx: Ctx) -> list[object]:
        fused = self.force(part.keywords.get("fused", [])) + self.fused_of(call, ctx)
        values: list[object] = []
        for func in part.funcs:
            if isinstance(func, Ext) and names.kind_of(func.qname) in OPTIMIZERS or fused:
                values.append(Opt(part.node, part.summary, fused))
            else:
                values.append(Opaque(call, ctx.summary))
        return values

    def fused_of(self, call: ast.Call, ctx: Ctx) -> list[object]:
        """The values the call's `fused` argument may take (also through `**` spreads, where
        some text of the project may write a `fused` key: fused_keys.py)."""
        values: list[object] = []
        for keyword in call.keywords:
            if keyword.arg == "fused":
                values.extend(self.ev(keyword.value, ctx))
            elif keyword.arg is None and self.spreads_may_hold_fused():
                for spread in self.ev(keyword.value, ctx):
                    if isinstance(spread, DictV) and "fused" in spread.entries:
                        values.extend(self.force(spread.entries["fused"]))
        return values

    def spreads_may_hold_fused(self) -> bool:
        """Some dict may hold the key `fused`: tested once per run, noted at each use as the
        `exists` test it is (fused_keys.py)."""
        if self.fused_keys is None:
            self.fused_keys = may_hold_fused(self.contents)
        else:
            noted_again(self.contents)
        return self.fused_keys

    def trainer_entry(self, cls: ClsV) -> EntryId | None:
        """A Trainer subclass is configured where its `__init__` calls `super().__init__`."""
        for klass in self.mro(cls):
            if isinstance(klass, ClsV):
                call = super_init_call(klass.node)
                if call is not None:
                    return klass.summary.entry(call)
        return None
