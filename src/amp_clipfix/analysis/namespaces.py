"""`types.SimpleNamespace(...)` as a value: an object whose attributes are its keywords.

`CFG = SimpleNamespace(precision="16-mixed", fused=True)` at module level or in a function:
`CFG.fused` is `True`, `vars(CFG)` the dict of its keywords (`AdamW(**vars(CFG.optim))`), a
`**spread` of a dict the code shows whole adds its keys. An attribute the code may set from
outside (`cfg.fused = args.fused`, `setattr(cfg, ...)`: the text is searched, as for a
dataclass field, fields.py) or one a spread the code does not show may hold is decided at run
time; an attribute it never sets raises AttributeError at run time and holds nothing here.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis import names
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase, Thunk
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import DictV, Opaque


class NamespaceV:
    """A `SimpleNamespace(**attributes)` made by `call`."""

    def __init__(self, attributes: DictV, node: ast.Call, summary: Summary, ctx: Ctx) -> None:
        self.attributes = attributes
        self.node = node
        self.summary = summary
        self.ctx = ctx


class Namespaces(EvaluatorBase):
    """SimpleNamespace objects and `vars(...)` of one."""

    def call_external(self, qname: str, call: ast.Call, ctx: Ctx) -> list[object]:
        kind = names.kind_of(qname)
        if kind is names.Kind.NAMESPACE and not call.args:
            attributes = DictV({k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg})
            for keyword in call.keywords:
                if keyword.arg is None:
                    self.merge_spread(attributes, self.ev(keyword.value, ctx))
            return [NamespaceV(attributes, call, ctx.summary, ctx)]
        if kind is names.Kind.VARS and len(call.args) == 1 and not call.keywords:
            values = self.ev(call.args[0], ctx)
            if values and all(isinstance(v, NamespaceV) for v in values):
                return [self.namespace_dict(v) for v in values]  # type: ignore[arg-type]
            return [Opaque(call, ctx.summary)]
        return super().call_external(qname, call, ctx)  # type: ignore[misc]

    def namespace_dict(self, namespace: NamespaceV) -> DictV:
        """`vars(namespace)`: its attributes, each also set from outside where the code may."""
        entries = {
            key: self.namespace_attribute(namespace, key) for key in namespace.attributes.entries
        }
        return DictV(entries, namespace.attributes.closed)

    def namespace_attribute(self, namespace: NamespaceV, attr: str) -> list[object]:
        values = self.force(namespace.attributes.entries.get(attr, []))
        if attr not in namespace.attributes.entries and namespace.attributes.closed:
            values = []  # never set here: only a store from outside sets it
        elif not namespace.attributes.closed:
            values = [*values, Opaque(namespace.node, namespace.summary)]
        return self.outside(values, attr, namespace.node, namespace.ctx)  # type: ignore[attr-defined]

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        if isinstance(value, NamespaceV):
            found = self.namespace_attribute(value, attr)
            return found or [Opaque(node, value.summary)]
        return super().attribute_of(value, attr, node)
