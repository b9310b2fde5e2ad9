"""Records as values: `dataclasses.asdict(x)`, `dataclasses.replace(x, field=v)` (and
`copy.replace`), and `typing.NamedTuple` classes with their `_replace(...)` / `_asdict()`.

- A `NamedTuple` class's annotated body statements are its fields, in order, with their
  defaults: an instance's field is what its construction gives it (fields.py, as for a
  dataclass).
- `replace(x, fused=True)` / `x._replace(fused=True)` is `x` with the fields it names set
  (`Replaced`): reading `fused` gives `True` whatever `x` held, any other field is `x`'s. A
  `**spread` of a dict the code shows whole sets its keys; one it does not show may set any
  field: decided at run time.
- `asdict(x)` / `x._asdict()` is a dict of every field of `x` by name, each with the values
  reading that field gives (nested dataclass instances are dicts too, as `asdict` makes them):
  `AdamW(**asdict(cfg))` takes `fused` from the config, `Trainer(**asdict(cfg.trainer))` its
  precision and clipping. A value that is no record the code shows is decided at run time.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis import names
from amp_clipfix.analysis.fields import Layout
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk
from amp_clipfix.analysis.shapes import literal_of
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, DictV, Ext, Inst, Lit, Opaque, TupleV

# How deep `asdict` turns nested dataclass instances into dicts.
MAX_NESTED = 3
# The methods a NamedTuple instance has that build records.
RECORD_METHODS = ("_replace", "_asdict")


class Replaced:
    """`replace(base, **changes)`: `base` with the fields `changes` holds set to its values.
    (This module's classes are written by hand, not made by `@dataclass`, which compiles their
    methods at every import.)"""

    def __init__(self, base: object, changes: DictV, node: ast.Call, summary: Summary) -> None:
        self.base = base
        self.changes = changes
        self.node = node
        self.summary = summary


class FieldV:
    """A `dataclasses.Field` of `fields(...)`: its `name` is a literal."""

    def __init__(self, cls: ClsV, name: str, statement: ast.AnnAssign) -> None:
        self.cls = cls
        self.name = name
        self.statement = statement


class RecordMethod:
    """`x._replace` / `x._asdict` of a NamedTuple instance, not called yet."""

    def __init__(self, record: object, name: str) -> None:
        self.record = record
        self.name = name


class DataclassCalls(EvaluatorBase):
    """`asdict`, `replace` and NamedTuple records."""

    def call_external(self, qname: str, call: ast.Call, ctx: Ctx) -> list[object]:
        kind = names.kind_of(qname)
        if kind is names.Kind.DATACLASS_ASDICT and len(call.args) == 1 and not call.keywords:
            return [self.as_dict(value, call, ctx) for value in self.record_values(call, ctx)]
        if kind is names.Kind.DATACLASS_FIELDS and len(call.args) == 1 and not call.keywords:
            return [self.fields_of(value, call, ctx) for value in self.record_values(call, ctx)]
        if kind is names.Kind.GETATTR and len(call.args) == 2 and not literal_of(call.args[1]):
            # `getattr(cfg, f.name)`: the attribute a name decided by the code names
            attributes = self.ev(call.args[1], ctx)
            if attributes and all(
                isinstance(a, Lit) and isinstance(a.value, str) for a in attributes
            ):
                return [
                    value
                    for record in self.ev(call.args[0], ctx)
                    for attribute in attributes
                    for value in self.attribute_of(record, attribute.value, call)  # type: ignore[attr-defined]
                ]
        if kind is names.Kind.DATACLASS_REPLACE and len(call.args) == 1:
            changes = self.changes(call, ctx)
            return [
                Replaced(value, changes, call, ctx.summary)
                for value in self.record_values(call, ctx)
            ]
        return super().call_external(qname, call, ctx)  # type: ignore[misc]

    def record_values(self, call: ast.Call, ctx: Ctx) -> list[object]:
        argument = call.args[0]
        if isinstance(argument, ast.Starred):
            return [Opaque(call, ctx.summary)]
        return self.ev(argument, ctx)

    def changes(self, call: ast.Call, ctx: Ctx) -> DictV:
        """The fields a `replace` call sets: its keywords, and the keys of the dicts it
        spreads (one the code does not show whole may set any field)."""
        changes = DictV({k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg})
        for keyword in call.keywords:
            if keyword.arg is None:
                self.merge_spread(changes, self.ev(keyword.value, ctx))
        return changes

    def call_record_method(self, method: RecordMethod, call: ast.Call, ctx: Ctx) -> list[object]:
        if method.name == "_asdict" and not call.args and not call.keywords:
            return [self.as_dict(method.record, call, ctx)]
        if method.name == "_replace" and not call.args:
            return [Replaced(method.record, self.changes(call, ctx), call, ctx.summary)]
        return [Opaque(call, ctx.summary)]

    def fields_of(self, value: object, call: ast.Call, ctx: Ctx) -> object:
        """`fields(x)`: a tuple of `Field`s of a record (or a record class), in order."""
        cls = value if isinstance(value, ClsV) else self.record_class(value)
        layout = None if cls is None else self.dataclass_layout(cls)
        if cls is None or layout is None:
            return Opaque(call, ctx.summary)
        return TupleV(
            [[FieldV(cls, name, statements[-1])] for name, statements in layout[0].items()]
        )

    # -- reading fields ------------------------------------------------------------------------

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        if isinstance(value, FieldV):
            if attr == "name":  # a string literal where the field is declared
                name = ast.copy_location(ast.Constant(value.name), value.statement.target)
                self.keep.append(name)
                return [Lit(value.name, name, value.cls.summary)]
            return [Opaque(node, value.cls.summary)]
        if isinstance(value, Replaced):
            changes = value.changes
            if attr in changes.entries:
                return self.force(changes.entries[attr])
            if attr in RECORD_METHODS and self.record_class(value) is not None:
                return [RecordMethod(value, attr)]
            kept = self.attribute_of(value.base, attr, node)
            return kept if changes.closed else [*kept, Opaque(value.node, value.summary)]
        if attr in RECORD_METHODS and isinstance(value, Inst) and self.named_tuple(value.cls):
            return [RecordMethod(value, attr)]
        return super().attribute_of(value, attr, node)

    def record_class(self, value: object) -> ClsV | None:
        """The project record class (a dataclass, a NamedTuple) of an instance, also through
        `replace`."""
        while isinstance(value, Replaced):
            value = value.base
        if isinstance(value, Inst) and self.dataclass_layout(value.cls) is not None:
            return value.cls
        return None

    def as_dict(self, value: object, call: ast.Call, ctx: Ctx, depth: int = 0) -> object:
        """`asdict(value)`: a dict of its fields (nested records as dicts); decided at run
        time when it is no record the code shows."""
        cls = self.record_class(value)
        layout = None if cls is None else self.dataclass_layout(cls)
        if layout is None or depth > MAX_NESTED:
            return Opaque(call, ctx.summary)
        result = DictV()
        for name in layout[0]:
            read = self.attribute_of(value, name, call)
            result.entries[name] = [
                self.as_dict(item, call, ctx, depth + 1) if self.nested_dataclass(item) else item
                for item in read
            ]
        return result

    def nested_dataclass(self, item: object) -> bool:
        """A dataclass instance (asdict makes a dict of it; a NamedTuple stays a tuple)."""
        cls = self.record_class(item)
        return cls is not None and not self.named_tuple(cls)

    # -- NamedTuple classes --------------------------------------------------------------------

    def named_tuple(self, cls: ClsV) -> bool:
        """A class whose one base is `typing.NamedTuple`."""
        mro = self.mro(cls)
        return (
            len(mro) == 2
            and isinstance(mro[1], Ext)
            and names.kind_of(mro[1].qname) is names.Kind.NAMED_TUPLE
        )

    def dataclass_layout(self, cls: ClsV) -> Layout | None:
        """A NamedTuple class's fields, as a dataclass's (fields.py): every annotated name of
        its body, in order, each may be given by position."""
        key = id(cls.node)
        if key not in self.layouts and self.named_tuple(cls):
            fields: dict[str, list[ast.AnnAssign]] = {}
            for statement in cls.node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    fields.setdefault(statement.target.id, []).append(statement)
            self.layouts[key] = (fields, None)
        return super().dataclass_layout(cls)  # type: ignore[misc]
